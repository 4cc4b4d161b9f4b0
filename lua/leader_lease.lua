-- leader_lease.lua: the one active leader (docs/architecture.md): a lease with an owner and
-- a fencing token that grows with every new holder.
-- KEYS[1] NS:leader (hash: id, pid, host, fencing_token, since), KEYS[2] NS:leader:fencing
-- ARGV[1] mode: acquire | renew | release | advance, ARGV[2] candidate id, ARGV[3] pid,
-- ARGV[4] host, ARGV[5] lease ms, ARGV[6] channel told when the lease is released,
-- ARGV[7] (advance) the fence the new token must be above
-- acquire: the fencing token when the caller holds the lease (new or already its own),
--          0 when another holder's lease is live.
-- renew:   the token when the caller still holds it (expiry pushed out), else 0.
-- release: 1 when the caller held it (deleted, channel told), else 0.
-- advance: when the caller holds the lease, a new token above the counter and above
--          ARGV[7] (a queue's fence left above the counter, e.g. by a failover that lost
--          increments: only the lease holder acts, so the fence is stale), the counter set
--          to it and the lease renewed; else 0.
local lease_key = KEYS[1]
local counter = KEYS[2]
local mode = ARGV[1]
local id = ARGV[2]
local pid = ARGV[3]
local host = ARGV[4]
local lease_arg = ARGV[5]
local released = ARGV[6]
local above = ARGV[7]
local lease = tonumber(lease_arg)
if id == nil or id == '' or not lease or lease <= 0 then
  return redis.error_reply('bad_request id and a positive lease are required')
end

local holder = redis.call('HGET', lease_key, 'id')
if mode == 'release' then
  if holder ~= id then return 0 end
  redis.call('DEL', lease_key)
  redis.call('PUBLISH', released, id)
  return 1
end
if mode == 'advance' then
  local floor = uint(above)
  if not floor then return redis.error_reply('bad_request advance needs the fence (an integer)') end
  if holder ~= id then return 0 end
  local token = redis.call('INCR', counter)
  if token <= floor then
    token = floor + 1
    redis.call('SET', counter, string.format('%d', token))
  end
  redis.call('HSET', lease_key, 'fencing_token', token)
  redis.call('PEXPIRE', lease_key, lease)
  return token
end
if holder == id then
  redis.call('PEXPIRE', lease_key, lease)
  return tonumber(redis.call('HGET', lease_key, 'fencing_token'))
end
if mode == 'renew' or holder then return 0 end
if mode ~= 'acquire' then return redis.error_reply('bad_request unknown mode ' .. tostring(mode)) end

local now = now_ms()
local token = redis.call('INCR', counter)
redis.call('HSET', lease_key, 'id', id, 'pid', pid, 'host', host,
           'fencing_token', token, 'since', string.format('%d', now))
redis.call('PEXPIRE', lease_key, lease)
return token
