-- positions.lua: where some users stand in a queue, and the queue's event sequence they
-- are true at, read together (a gateway's `position` op and its re-read after a missed
-- queue event: one call per queue, however many users).
-- KEYS[1] NS:{q:Q}:waiting, KEYS[2] NS:{q:Q}:events
-- ARGV users (at most 100000)
-- Returns {sequence, position_1, ticket_1, position_2, ticket_2, ...}; position and ticket
-- are 0 for a user who is not waiting.
local waiting = KEYS[1]
local events = KEYS[2]
if #ARGV > 100000 then return redis.error_reply('bad_request at most 100000 users') end
local out = {tonumber(redis.call('GET', events) or '0')}
for i = 1, #ARGV do
  local rank = redis.call('ZRANK', waiting, ARGV[i])
  if rank then
    out[2 * i] = rank + 1
    out[2 * i + 1] = tonumber(redis.call('ZSCORE', waiting, ARGV[i]))
  else
    out[2 * i], out[2 * i + 1] = 0, 0
  end
end
return out
