-- opening_move.lua: moves pre-queued users behind the users already waiting, a batch per
-- call, under the leader's fencing token (docs/protocol.md "Pre-queue"). Shuffled: the
-- lowest draw keys first (opening_draw.lua has drawn every user who joined before the
-- opening), then those who joined after it in join order; else in join order. Every
-- moved user takes the next ticket, so a batch lands at the tail as joins do; nobody
-- joins the waiting list meanwhile (joins go to the pre-queue until it is empty). The
-- last batch opens the queue (state open).
-- KEYS[1] NS:{q:Q}:settings, KEYS[2] NS:{q:Q}:prequeue, KEYS[3] NS:{q:Q}:prequeue:draw,
-- KEYS[4] NS:{q:Q}:fence, KEYS[5] NS:{q:Q}:waiting, KEYS[6] NS:{q:Q}:ticket,
-- KEYS[7] NS:{q:Q}:events, KEYS[8] NS:{q:Q}:prequeue:seq
-- ARGV[1] fencing token, ARGV[2] the most users to move (1..1000), ARGV[3] wake channel,
-- ARGV[4] queue name
-- Publishes the queue event "QUEUE SEQ m POSITION TICKET USER...": the users moved, in
-- order, the first at POSITION with TICKET, each next one a place and a ticket further.
-- Returns {users moved, users left in the pre-queue, due (0: not in the pre-queue or not
-- yet time: nothing done), undrawn (1: a shuffled opening found users without a draw key:
-- run opening_draw.lua first; nothing moved)}.
-- Errors: fenced (a newer leader has acted on this queue), bad_request.
local settings = KEYS[1]
local prequeue = KEYS[2]
local draw = KEYS[3]
local fence = KEYS[4]
local waiting = KEYS[5]
local ticket_counter = KEYS[6]
local events = KEYS[7]
local prequeue_seq = KEYS[8]
local token_arg = ARGV[1]
local max_arg = ARGV[2]
local wake = ARGV[3]
local queue = ARGV[4]
local token = uint(token_arg)
local max = uint(max_arg)
if not token or not max or max < 1 or max > 1000 then
  return redis.error_reply('bad_request fencing token and a batch size 1..1000 expected')
end
local refused = fence_refusal(fence, token, token_arg)
if refused then return refused end

local cfg = redis.call('HMGET', settings, 'state', 'opens_at', 'shuffle')
if cfg[1] ~= 'prequeue' or now_ms() < (tonumber(cfg[2] or '0') or 0) then
  return {0, redis.call('ZCARD', prequeue), 0, 0}
end

local users = {}
if cfg[3] == '1' then
  -- The drawn users are among those who joined before the opening (leave.lua and this
  -- script take a user out of both): fewer keys than such users means some are undrawn.
  local early = redis.call('ZCOUNT', prequeue, '-inf', '(281474976710656')
  if redis.call('ZCARD', draw) < early then return {0, redis.call('ZCARD', prequeue), 1, 1} end
  local drawn = redis.call('ZRANGE', draw, 0, max - 1)
  if #drawn > 0 then
    redis.call('ZREM', draw, unpack(drawn))
    for i = 1, #drawn do
      -- A user who left meanwhile keeps no place.
      if redis.call('ZSCORE', prequeue, drawn[i]) then users[#users + 1] = drawn[i] end
    end
  else
    users = redis.call('ZRANGE', prequeue, 0, max - 1)
  end
else
  users = redis.call('ZRANGE', prequeue, 0, max - 1)
end

local n = #users
if n > 0 then
  local first = redis.call('INCRBY', ticket_counter, n) - n + 1
  local adds = {}
  for i = 1, n do
    adds[2 * i - 1], adds[2 * i] = first + i - 1, users[i]
  end
  redis.call('ZADD', waiting, unpack(adds))
  redis.call('ZREM', prequeue, unpack(users))
  local position = redis.call('ZCARD', waiting) - n + 1
  local seq = redis.call('INCR', events)
  redis.call('PUBLISH', wake, queue .. ' ' .. string.format('%d', seq) .. ' m ' ..
             string.format('%d', position) .. ' ' .. string.format('%d', first) .. ' ' ..
             table.concat(users, ' '))
end
local left = redis.call('ZCARD', prequeue)
if left == 0 then
  redis.call('HSET', settings, 'state', 'open')
  redis.call('HDEL', settings, 'opens_at')
  redis.call('DEL', draw, prequeue_seq)
end
return {n, left, 1, 0}
