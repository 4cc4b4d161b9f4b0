-- presence_close.lua: a session of `user` on the gateway instance `instance` ended. One
-- call per session close. A close that arrives after the instance was folded (its sessions
-- already counted closed by presence_fold.lua) changes nothing.
-- KEYS[1] NS:{presence}:count, KEYS[2] NS:{presence}:gw:INSTANCE,
-- KEYS[3] NS:{presence}:absent (presence_open.lua describes them)
-- ARGV[1] user
-- Returns the user's open sessions left, or -1 when this close was already counted.
local count = KEYS[1]
local gateway = KEYS[2]
local absent = KEYS[3]
local user = ARGV[1]
local here = tonumber(redis.call('HGET', gateway, user) or '0')
if here <= 0 then return -1 end
if here == 1 then
  redis.call('HDEL', gateway, user)
else
  redis.call('HINCRBY', gateway, user, -1)
end
local open = redis.call('HINCRBY', count, user, -1)
if open <= 0 then
  redis.call('HDEL', count, user)
  redis.call('ZADD', absent, now_ms(), user)
  return 0
end
return open
