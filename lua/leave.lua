-- leave.lua: remove a user from a queue's waiting list.
-- KEYS[1] NS:{q:Q}:waiting, KEYS[2] NS:{q:Q}:events
-- ARGV[1] user, ARGV[2] wake channel, ARGV[3] queue name
-- Returns the event sequence of the removal. Error: not_queued.
local user = ARGV[1]
local ticket = redis.call('ZSCORE', KEYS[1], user)
if not ticket then
  return redis.error_reply('not_queued ' .. user .. ' is not queued')
end
redis.call('ZREM', KEYS[1], user)
return queue_event(KEYS[2], ARGV[2], ARGV[3], 'r', {ticket})
