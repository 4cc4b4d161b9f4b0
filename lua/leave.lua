-- leave.lua: remove a user from a queue's waiting list (or from its pre-queue).
-- KEYS[1] NS:{q:Q}:waiting, KEYS[2] NS:{q:Q}:events, KEYS[3] NS:{q:Q}:prequeue,
-- KEYS[4] NS:{q:Q}:prequeue:draw (the opening's shuffle keys)
-- ARGV[1] user, ARGV[2] wake channel, ARGV[3] queue name
-- Returns the event sequence of the removal (0 for a pre-queued user: no position moved).
-- Error: not_queued.
local waiting = KEYS[1]
local events = KEYS[2]
local prequeue = KEYS[3]
local draw = KEYS[4]
local user = ARGV[1]
local wake = ARGV[2]
local queue = ARGV[3]
local ticket = redis.call('ZSCORE', waiting, user)
if not ticket then
  if redis.call('ZREM', prequeue, user) == 1 then
    redis.call('ZREM', draw, user)
    return 0
  end
  return redis.error_reply('not_queued ' .. user .. ' is not queued')
end
redis.call('ZREM', waiting, user)
return queue_event(events, wake, queue, 'r', {ticket})
