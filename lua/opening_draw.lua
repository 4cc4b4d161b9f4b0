-- opening_draw.lua: the first step of a shuffled opening (docs/protocol.md "Pre-queue"):
-- gives pre-queued users a random draw key each, from the leader's cryptographic RNG, a
-- page of the pre-queue per call. Only users who joined before the opening (join order
-- below 2^48, join.lua) are drawn; a user who has a key keeps it (a resumed opening draws
-- only what is missing), so the order is uniform however often the leader changes.
-- KEYS[1] NS:{q:Q}:settings, KEYS[2] NS:{q:Q}:prequeue, KEYS[3] NS:{q:Q}:prequeue:draw
-- (zset user -> draw key), KEYS[4] NS:{q:Q}:fence (assign.lua's)
-- ARGV[1] fencing token, ARGV[2] join order to start after ("0": the beginning),
-- ARGV[3..] draw keys (integers below 2^49: at most 15 digits), one per pre-queued user to look at (<= 1000)
-- Returns {join order to go on after, users drawn, done (1: no user left after it),
-- due (0: the queue is not in its pre-queue, or its opening time has not come: nothing done)}.
-- Errors: fenced (a newer leader has acted on this queue), bad_request.
local settings = KEYS[1]
local prequeue = KEYS[2]
local draw = KEYS[3]
local fence = KEYS[4]
local token_arg = ARGV[1]
local after_arg = ARGV[2]
local draw_keys = rest(ARGV, 3)
local token = uint(token_arg)
local after = uint(after_arg)
local count = #draw_keys
if not token or not after or count < 1 or count > 1000 then
  return redis.error_reply('bad_request fencing token, cursor and 1..1000 draw keys expected')
end
local refused = fence_refusal(fence, token, token_arg)
if refused then return refused end

local cfg = redis.call('HMGET', settings, 'state', 'opens_at')
if cfg[1] ~= 'prequeue' or now_ms() < (tonumber(cfg[2] or '0') or 0) then
  return {after, 0, 1, 0}
end
local page = redis.call('ZRANGE', prequeue, '(' .. string.format('%d', after),
                        '(281474976710656', 'BYSCORE', 'LIMIT', 0, count, 'WITHSCORES')
local drawn = 0
local last = after
for i = 1, #page, 2 do
  local user = page[i]
  last = tonumber(page[i + 1])
  if not redis.call('ZSCORE', draw, user) then
    local key = uint(draw_keys[(i + 1) / 2])
    if not key then return redis.error_reply('bad_request a draw key is not an integer') end
    redis.call('ZADD', draw, key, user)
    drawn = drawn + 1
  end
end
local done = 0
if #page / 2 < count then done = 1 end
return {last, drawn, done, 1}
