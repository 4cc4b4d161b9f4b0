-- resource_remove.lua: take a resource out of the pool (free or assigned). Its holder,
-- if any, no longer holds an assignment.
-- KEYS[1] res:meta, KEYS[2] res:free, KEYS[3] res:holder, KEYS[4] assigned
-- ARGV[1] resource id
-- Returns 1. Error: not_found.
local id = ARGV[1]
if redis.call('HDEL', KEYS[1], id) == 0 then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
redis.call('ZREM', KEYS[2], id)
local user = redis.call('HGET', KEYS[3], id)
if user then
  redis.call('HDEL', KEYS[3], id)
  if redis.call('HGET', KEYS[4], user) == id then
    redis.call('HDEL', KEYS[4], user)
  end
end
return 1
