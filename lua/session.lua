-- session.lua: a session starts: the user's epoch (created when missing), latest offset
-- and acked offset.
-- KEYS[1] NS:{bus:N}:u:U:meta (U's keys are in its bus shard's slot)
-- ARGV[1] new epoch (used when none is stored, and when the stored one is rotated)
-- ARGV[2] optional: idle ttl ms; when given (> 0) and the meta hash has no expiry yet
--         (e.g. it was just created here), it gets one, so users who connect but never
--         receive a message leave nothing behind for ever. claim.lua (on delivery) and
--         the gateways (while a session is open) renew it. '' or 0: none.
-- ARGV[3] optional: the client's since epoch; ARGV[4]: its since offset.
-- ARGV[5] optional: 'r' = a live session saw this user's offsets go back (failover).
--         When ARGV[3] is the stored epoch and either the since offset is beyond the
--         stored offset (the client saw offsets this Redis no longer has: an async replica
--         was promoted) or ARGV[5] is 'r', the epoch is replaced by ARGV[1] here, atomically:
--         every client of the old epoch then gets recovered:false (docs/operations.md
--         "Failover semantics"). Offsets, acked and the inbox stay as they are.
-- Returns {epoch, offset, acked, rotated} (integers, 0 when unset; rotated 1 or 0).
-- Error: bad_request (empty epoch, bad ttl, bad since offset, since offset without epoch).
local meta = KEYS[1]
local epoch = ARGV[1]
local idle_ttl = ARGV[2]
local since_epoch = ARGV[3]
local since_offset_arg = ARGV[4]
local force_arg = ARGV[5]
if epoch == nil or epoch == '' then
  return redis.error_reply('bad_request new epoch is empty')
end
local idle = 0
if idle_ttl ~= nil and idle_ttl ~= '' then
  if not string.match(idle_ttl, '^%d+$') or #idle_ttl > 15 then
    return redis.error_reply('bad_request idle ttl must be a non-negative integer')
  end
  idle = tonumber(idle_ttl)
end
local since_offset = nil
if since_epoch ~= nil and since_epoch ~= '' then
  since_offset = uint(since_offset_arg)
  if since_offset == nil then
    return redis.error_reply('bad_request since offset must be a non-negative integer')
  end
end
local force = force_arg == 'r'
local rotated = 0
if redis.call('HSETNX', meta, 'epoch', epoch) == 0 and since_offset ~= nil then
  local m = redis.call('HMGET', meta, 'epoch', 'offset')
  if m[1] == since_epoch and (force or since_offset > (tonumber(m[2]) or 0)) then
    redis.call('HSET', meta, 'epoch', epoch)
    rotated = 1
  end
end
if idle > 0 and redis.call('PTTL', meta) == -1 then
  redis.call('PEXPIRE', meta, idle)
end
local m = redis.call('HMGET', meta, 'epoch', 'offset', 'acked')
return {m[1], tonumber(m[2]) or 0, tonumber(m[3]) or 0, rotated}
