-- standing.lua: where one user stands in a queue, read atomically: waiting (position and
-- ticket, and the event sequence they are true at) or pre-queued (the opening time).
-- KEYS[1] NS:{q:Q}:waiting, KEYS[2] NS:{q:Q}:events, KEYS[3] NS:{q:Q}:prequeue,
-- KEYS[4] NS:{q:Q}:settings
-- ARGV[1] user
-- Returns {sequence, position, ticket, prequeued (0/1), opens_at (0: none)}; position 0:
-- not waiting.
local waiting = KEYS[1]
local events = KEYS[2]
local prequeue = KEYS[3]
local settings = KEYS[4]
local user = ARGV[1]
local seq = tonumber(redis.call('GET', events) or '0')
local rank = redis.call('ZRANK', waiting, user)
if rank then
  return {seq, rank + 1, tonumber(redis.call('ZSCORE', waiting, user)), 0, 0}
end
if redis.call('ZSCORE', prequeue, user) then
  local opens_at = 0
  if redis.call('HGET', settings, 'state') == 'prequeue' then
    opens_at = tonumber(redis.call('HGET', settings, 'opens_at') or '0') or 0
  end
  return {seq, 0, 0, 1, opens_at}
end
return {seq, 0, 0, 0, 0}
