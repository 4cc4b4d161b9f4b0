-- release.lua: a worker hands back a lease it will not use (it is shutting down), so
-- another worker (or the sweeper) can claim the message at once instead of after the lease.
-- KEYS[1] the record's bucket NS:{bus:N}:c:<source>:<id div 524288> (a hash, as described in
--   claim.lua; a string key holding one record is accepted too, with an empty field)
-- ARGV[1] owner token, ARGV[2] the record's field in the bucket ('' = KEYS[1] is a string)
-- Returns 1 when the caller held the lease (now released), else 0.
local bucket = KEYS[1]
local caller = ARGV[1]
local field_arg = ARGV[2]
local field = field_arg or ''
local v
if field == '' then v = redis.call('GET', bucket) else v = redis.call('HGET', bucket, field) end
local owner, _, attempts = lease_of(v)
if not owner or owner ~= caller then return 0 end
if field == '' then
  redis.call('SET', bucket, released_record(attempts), 'KEEPTTL')
else
  redis.call('HSET', bucket, field, released_record(attempts))
end
return 1
