-- revoke.lua: POST /api/disconnect and `pushonce-leader disconnect`: every gateway closes the
-- user's sessions (a broadcast on the control channel); with revoke, the user's tokens
-- issued at or before now are refused until now + lifetime (docs/data-model.md,
-- "Revocations"; docs/security.md, "Revocation").
-- KEYS[1] NS:{revoked}: hash, field user, value "AT_MS:UNTIL_MS"; its own expiry is the
--         latest UNTIL_MS, so it disappears with the last revocation
-- KEYS[2] NS:{revoked}:until: zset, user by UNTIL_MS (which fields have expired, and the
--         latest UNTIL_MS, without reading the hash: a burst of revocations stays O(log n))
-- ARGV[1] the control channel (NS:control, classic Pub/Sub: every gateway hears it)
-- ARGV[2] user (a valid name, checked by the caller)
-- ARGV[3] '1' revoke, '0' disconnect only
-- ARGV[4] the revocation's lifetime, ms (1..31536000000; ignored without revoke)
-- Returns {revoked_at_ms, until_ms, receivers}: the time (Redis's clock), when the user's
-- revocation ends (now + lifetime, or later when an earlier one lasts longer; 0 without
-- revoke), and how many gateways heard the broadcast.
-- Error: bad_request (empty user, bad flag, bad lifetime).
local revoked = KEYS[1]
local expiries = KEYS[2]
local channel = ARGV[1]
local user = ARGV[2]
local flag = ARGV[3]
local lifetime_arg = ARGV[4]
local lifetime = uint(lifetime_arg)
if user == nil or user == '' then
  return redis.error_reply('bad_request empty user')
end
if flag ~= '1' and flag ~= '0' then
  return redis.error_reply('bad_request revoke must be 1 or 0')
end
if flag == '1' and (not lifetime or lifetime < 1 or lifetime > 31536000000) then
  return redis.error_reply('bad_request lifetime must be 1..31536000000 ms')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if flag == '0' then
  local n = redis.call('PUBLISH', channel, 'd ' .. user)
  return {now, 0, n}
end
local until_ms = now + lifetime
local expired = redis.call('ZRANGEBYSCORE', expiries, '-inf', now, 'LIMIT', 0, 1000)
if #expired > 0 then
  redis.call('HDEL', revoked, unpack(expired))
  redis.call('ZREM', expiries, unpack(expired))
end
-- A revocation of the user that lasts longer is not shortened.
local before = tonumber(redis.call('ZSCORE', expiries, user) or '0')
if before > until_ms then until_ms = before end
redis.call('ZADD', expiries, until_ms, user)
local latest = until_ms
local top = redis.call('ZRANGE', expiries, -1, -1, 'WITHSCORES')
if top[2] and tonumber(top[2]) > latest then latest = tonumber(top[2]) end
redis.call('HSET', revoked, user, now .. ':' .. until_ms)
redis.call('PEXPIREAT', revoked, latest)
redis.call('PEXPIREAT', expiries, latest)
local n = redis.call('PUBLISH', channel, 'r ' .. now .. ' ' .. until_ms .. ' ' .. user)
return {now, until_ms, n}
