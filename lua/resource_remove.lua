-- resource_remove.lua: take a resource out of the pool (free or assigned). Its holder,
-- if any, no longer holds an assignment.
-- KEYS[1] res:meta, KEYS[2] res:free, KEYS[3] res:holder, KEYS[4] assigned,
-- KEYS[5] pending, KEYS[6] pending:ids (optional: the holder's acceptance ends too)
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
    if KEYS[6] then
      redis.call('ZREM', KEYS[5], user)
      redis.call('HDEL', KEYS[6], user)
    end
  end
end
return 1
