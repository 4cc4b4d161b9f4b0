-- accept.lua: the user takes the resource of its assignment before the deadline. Runs
-- in the queue's slot, as expire.lua does, so between accept and expiry exactly one wins.
-- An accept renews the admission's lease (settings session_s, unless session_renewal is
-- off). Returns {id, resource, lease end ms ("" without a lease)}; accepting twice answers
-- the same. Error: not_found when the user holds no such assignment (never had one,
-- released, or expired).
local pending = KEYS[1]      -- zset user -> accept_by
local pending_ids = KEYS[2]  -- hash user -> id
local assigned = KEYS[3]     -- hash user -> resource
local admissions = KEYS[4]   -- optional: the record becomes "accepted"
local leases = KEYS[5]       -- optional: zset user -> lease end; an accept renews the lease
local settings = KEYS[6]     -- with KEYS[5]: session_s, session_renewal
local admissions_t = KEYS[7] -- optional: zset id -> keep until (the record outlives the lease)
local user = ARGV[1]
local want = ARGV[2]         -- assignment id ("" = whatever the user holds)
local id = redis.call('HGET', pending_ids, user)
local resource = redis.call('HGET', assigned, user)
if not id or not resource or (want ~= '' and want ~= id) then
  return redis.error_reply('not_found ' .. user .. ' holds no assignment ' .. want)
end
redis.call('ZREM', pending, user)
admission_state(admissions, id, 'accepted')
local ends = ''
if leases and settings then
  local now = now_ms()
  local lease_end, renews = lease_terms(settings, now)
  local current = tonumber(redis.call('ZSCORE', leases, user))
  if lease_end and renews and current and current > now and lease_end > current then
    redis.call('ZADD', leases, string.format('%d', lease_end), user)
    keep_record(admissions_t, id, lease_end)
    current = lease_end
  end
  if current then ends = string.format('%d', current) end
end
return {id, resource, ends}
