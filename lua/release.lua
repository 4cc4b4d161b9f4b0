-- release.lua: a worker hands back a lease it will not use (it is shutting down), so
-- another worker (or the sweeper) can claim the message at once instead of after the lease.
-- KEYS[1] NS:{u:U}:claim:<id>
-- ARGV[1] owner token
-- Returns 1 when the caller held the lease (now released), else 0.
local c = redis.call('HMGET', KEYS[1], 'state', 'owner')
if c[1] ~= 'leased' or c[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'released')
redis.call('HDEL', KEYS[1], 'until')
return 1
