-- release.lua: a worker hands back a lease it will not use (it is shutting down), so
-- another worker (or the sweeper) can claim the message at once instead of after the lease.
-- KEYS[1] NS:{u:U}:c:<id> (the string record described in claim.lua)
-- ARGV[1] owner token
-- Returns 1 when the caller held the lease (now released), else 0.
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 2) ~= 'l:' then return 0 end
local owner, attempts = string.match(v, '^l:(.*):%d+:(%d+)$')
if owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'r:' .. attempts, 'KEEPTTL')
return 1
