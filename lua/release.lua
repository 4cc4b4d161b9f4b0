-- release.lua: a worker hands back a lease it will not use (it is shutting down), so
-- another worker (or the sweeper) can claim the message at once instead of after the lease.
-- KEYS[1] the record's bucket NS:{bus:N}:c:<source>:<id div 524288> (a hash, as described in
--   claim.lua; a string key holding one record is accepted too, with an empty field)
-- ARGV[1] owner token, ARGV[2] the record's field in the bucket ('' = KEYS[1] is a string)
-- Returns 1 when the caller held the lease (now released), else 0.
local field = ARGV[2] or ''
local v
if field == '' then v = redis.call('GET', KEYS[1]) else v = redis.call('HGET', KEYS[1], field) end
local owner, _, attempts = lease_of(v)
if not owner or owner ~= ARGV[1] then return 0 end
if field == '' then
  redis.call('SET', KEYS[1], released_record(attempts), 'KEEPTTL')
else
  redis.call('HSET', KEYS[1], field, released_record(attempts))
end
return 1
