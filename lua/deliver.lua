-- deliver.lua: the claim winner appends the rendered frame to the user's inbox with the
-- next offset, publishes it on the user's channel and marks the claim delivered.
-- KEYS[1] NS:{u:U}:claim:<id>, KEYS[2] NS:{u:U}:meta, KEYS[3] NS:{u:U}:inbox,
-- KEYS[4] NS:{u:U}:ch (the user channel; a channel, named here for its slot)
-- ARGV[1] owner token, ARGV[2] frame head, ARGV[3] frame tail, ARGV[4] dedup window ms,
-- ARGV[5] inbox maxlen, ARGV[6] idle ttl ms, ARGV[7] new epoch (used when none is stored)
-- The frame is head .. offset .. tail.
-- Returns the offset (integer).
-- Errors: fenced (the caller does not hold a live lease: never claimed, lease expired,
-- another owner, or already delivered), bad_request (bad number).
local function uint(v)
  if type(v) ~= 'string' or not string.match(v, '^%d+$') or #v > 15 then return nil end
  return tonumber(v)
end

local owner, head, tail, epoch = ARGV[1], ARGV[2], ARGV[3], ARGV[7]
local window = uint(ARGV[4])
local maxlen = uint(ARGV[5])
local idle = uint(ARGV[6])
if not window or window == 0 or not maxlen or not idle or idle == 0 then
  return redis.error_reply('bad_request dedup window, maxlen and idle ttl must be positive integers')
end
if epoch == nil or epoch == '' then
  return redis.error_reply('bad_request new epoch is empty')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local c = redis.call('HMGET', KEYS[1], 'state', 'owner', 'until')
local till = tonumber(c[3])
if c[1] ~= 'leased' or c[2] ~= owner or not till or till < now then
  return redis.error_reply('fenced the lease on this message is not held by ' .. owner)
end

if redis.call('HSETNX', KEYS[2], 'epoch', epoch) == 1 then
  -- A new epoch: an inbox left from an earlier epoch (its offsets restart) is stale.
  redis.call('DEL', KEYS[3])
end
local offset = redis.call('HINCRBY', KEYS[2], 'offset', 1)
local off = string.format('%.0f', offset)
local frame = head .. off .. tail
redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxlen, off .. '-0', 'f', frame)
redis.call('PUBLISH', KEYS[4], frame)
redis.call('HSET', KEYS[1], 'state', 'delivered', 'offset', off)
redis.call('HDEL', KEYS[1], 'until')
redis.call('PEXPIRE', KEYS[1], window)
redis.call('PEXPIRE', KEYS[2], idle)
redis.call('PEXPIRE', KEYS[3], idle)
return offset
