-- resource_release.lua: the holder of a resource is done; it becomes free again
-- (at the tail of the free order) and the leader is woken to hand it on.
-- KEYS[1] res:meta, KEYS[2] res:free, KEYS[3] res:seq, KEYS[4] res:holder, KEYS[5] assigned,
-- KEYS[6] pending, KEYS[7] pending:ids (optional: the holder's acceptance ends too)
-- ARGV[1] resource id, ARGV[2] wake channel, ARGV[3] queue name
-- Returns 1. Errors: not_found (unknown id), not_assigned (the resource is free).
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[1], id) == 0 then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
local user = redis.call('HGET', KEYS[4], id)
if not user then
  return redis.error_reply('not_assigned resource ' .. id .. ' is not assigned')
end
redis.call('HDEL', KEYS[4], id)
if redis.call('HGET', KEYS[5], user) == id then
  redis.call('HDEL', KEYS[5], user)
  if KEYS[7] then
    redis.call('ZREM', KEYS[6], user)
    redis.call('HDEL', KEYS[7], user)
  end
end
local order = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], order, id)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
