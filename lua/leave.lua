-- leave.lua: remove a user from a queue's waiting list.
-- KEYS[1] NS:{q:Q}:waiting
-- ARGV[1] user, ARGV[2] wake channel, ARGV[3] queue name
-- Returns 1. Error: not_queued.
local user = ARGV[1]
if redis.call('ZREM', KEYS[1], user) == 0 then
  return redis.error_reply('not_queued ' .. user .. ' is not queued')
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
