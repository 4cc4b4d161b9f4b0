-- leader_lease.lua: the one active leader (docs/architecture.md): a lease with an owner and
-- a fencing token that grows with every new holder.
-- KEYS[1] NS:leader (hash: id, pid, host, fencing_token, since), KEYS[2] NS:leader:fencing
-- ARGV[1] mode: acquire | renew | release, ARGV[2] candidate id, ARGV[3] pid, ARGV[4] host,
-- ARGV[5] lease ms, ARGV[6] channel told when the lease is released
-- acquire: the fencing token when the caller holds the lease (new or already its own),
--          0 when another holder's lease is live.
-- renew:   the token when the caller still holds it (expiry pushed out), else 0.
-- release: 1 when the caller held it (deleted, channel told), else 0.
local mode, id = ARGV[1], ARGV[2]
local lease = tonumber(ARGV[5])
if id == nil or id == '' or not lease or lease <= 0 then
  return redis.error_reply('bad_request id and a positive lease are required')
end

local holder = redis.call('HGET', KEYS[1], 'id')
if mode == 'release' then
  if holder ~= id then return 0 end
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[6], id)
  return 1
end
if holder == id then
  redis.call('PEXPIRE', KEYS[1], lease)
  return tonumber(redis.call('HGET', KEYS[1], 'fencing_token'))
end
if mode == 'renew' or holder then return 0 end
if mode ~= 'acquire' then return redis.error_reply('bad_request unknown mode ' .. tostring(mode)) end

local now = now_ms()
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'id', id, 'pid', ARGV[3], 'host', ARGV[4],
           'fencing_token', token, 'since', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], lease)
return token
