-- session.lua: a session starts: the user's epoch (created when missing), latest offset
-- and acked offset.
-- KEYS[1] NS:{u:U}:meta
-- ARGV[1] new epoch (used only when none is stored)
-- ARGV[2] optional: idle ttl ms; when given (> 0) and the meta hash has no expiry yet
--         (e.g. it was just created here), it gets one, so users who connect but never
--         receive a message leave nothing behind for ever. deliver.lua refreshes it.
-- Returns {epoch, offset, acked} (offset and acked integers, 0 when unset).
-- Error: bad_request (empty epoch, bad ttl).
local epoch = ARGV[1]
if epoch == nil or epoch == '' then
  return redis.error_reply('bad_request new epoch is empty')
end
local idle = 0
if ARGV[2] ~= nil and ARGV[2] ~= '' then
  if not string.match(ARGV[2], '^%d+$') or #ARGV[2] > 15 then
    return redis.error_reply('bad_request idle ttl must be a non-negative integer')
  end
  idle = tonumber(ARGV[2])
end
redis.call('HSETNX', KEYS[1], 'epoch', epoch)
if idle > 0 and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], idle)
end
local m = redis.call('HMGET', KEYS[1], 'epoch', 'offset', 'acked')
return {m[1], tonumber(m[2]) or 0, tonumber(m[3]) or 0}
