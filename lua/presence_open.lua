-- presence_open.lua: a session of `user` opened on the gateway instance `instance`
-- (docs/data-model.md, "Presence"). One call per session open.
-- KEYS[1] NS:{presence}:count (hash user -> open sessions, all gateways)
-- KEYS[2] NS:{presence}:gw:INSTANCE (hash user -> sessions on that gateway instance)
-- KEYS[3] NS:{presence}:gws (zset instance -> first registration ms)
-- KEYS[4] NS:{presence}:absent (zset user -> ms since the user has had no session)
-- ARGV[1] user, ARGV[2] instance
-- Returns the user's open sessions, this one included.
local count = KEYS[1]
local gateway = KEYS[2]
local gateways = KEYS[3]
local absent = KEYS[4]
local user = ARGV[1]
local instance = ARGV[2]
redis.call('HINCRBY', gateway, user, 1)
redis.call('ZADD', gateways, 'NX', now_ms(), instance)
local open = redis.call('HINCRBY', count, user, 1)
if open == 1 then redis.call('ZREM', absent, user) end
return open
