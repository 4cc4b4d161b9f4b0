-- abandon.lua: users who have had no session for the queue's abandon_after_s (the leader
-- chose them from NS:{presence}:absent) leave the queue: a waiting user is removed as by
-- leave.lua (one queue event for the batch, counted in stats `abandoned`); an assigned user
-- who has not accepted gets its accept deadline moved to now, so expire.lua ends the
-- assignment (an `expired` message, the resource to the next user; counted in stats
-- `abandoned_assignments`). Anyone else is left alone.
-- KEYS[1] waiting, KEYS[2] events, KEYS[3] pending (zset user -> accept_by, the users
-- assigned and not accepted), KEYS[4] stats, KEYS[5] fence, KEYS[6] prequeue, KEYS[7]
-- prequeue:draw (a pre-queued user leaves the pre-queue, counted in `abandoned` too)
-- ARGV[1] queue name, ARGV[2] wake channel, ARGV[3] fencing token ("0" = none),
-- ARGV[4..] users (at most 1000)
-- Returns {users removed from the waiting list, assignments ended}. Error: fenced,
-- bad_request.
local waiting = KEYS[1]
local events = KEYS[2]
local pending = KEYS[3]
local stats = KEYS[4]
local fence = KEYS[5]
local prequeue = KEYS[6]
local draw = KEYS[7]
local queue = ARGV[1]
local wake = ARGV[2]
local token_arg = ARGV[3]
local users = rest(ARGV, 4)
local token = uint(token_arg)
if not token then return redis.error_reply('bad_request fencing token must be an integer') end
if #users > 1000 then return redis.error_reply('bad_request at most 1000 users') end
if token ~= 0 then
  local refused = fence_refusal(fence, token, token_arg)
  if refused then return refused end
end
local removed, tickets, ended, prequeued = {}, {}, 0, 0
for _, user in ipairs(users) do
  local ticket = redis.call('ZSCORE', waiting, user)
  if ticket then
    removed[#removed + 1] = user
    tickets[#tickets + 1] = ticket
  elseif prequeue and redis.call('ZREM', prequeue, user) == 1 then
    redis.call('ZREM', draw, user)
    prequeued = prequeued + 1
  elseif redis.call('ZADD', pending, 'XX', 'CH', 0, user) == 1 then
    ended = ended + 1
  end
end
if #removed > 0 then
  redis.call('ZREM', waiting, unpack(removed))
  queue_event(events, wake, queue, 'r', tickets)
  redis.call('HINCRBY', stats, 'abandoned', #removed)
  report_count(stats, now_ms(), 'abandoned', #removed)
end
if prequeued > 0 then
  redis.call('HINCRBY', stats, 'abandoned', prequeued)
  report_count(stats, now_ms(), 'abandoned', prequeued)
end
if ended > 0 then redis.call('HINCRBY', stats, 'abandoned_assignments', ended) end
return {#removed + prequeued, ended}
