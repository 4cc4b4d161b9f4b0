-- revoke.lua: POST /api/disconnect and `pushonce-leader disconnect`: every gateway closes the
-- user's sessions (a broadcast on the control channel); with revoke, the user's tokens
-- issued at or before now are refused until now + lifetime (docs/data-model.md,
-- "Revocations"; docs/security.md, "Revocation").
-- KEYS[1] NS:{revoked}: hash, field user, value "AT_MS:UNTIL_MS"; its own expiry is the
--         latest UNTIL_MS, so it disappears with the last revocation
-- ARGV[1] the control channel (NS:control, classic Pub/Sub: every gateway hears it)
-- ARGV[2] user (a valid name, checked by the caller)
-- ARGV[3] '1' revoke, '0' disconnect only
-- ARGV[4] the revocation's lifetime, ms (1..31536000000; ignored without revoke)
-- Returns {revoked_at_ms, until_ms, receivers}: the time (Redis's clock), 0 for until_ms
-- without revoke, and how many gateways heard the broadcast.
-- Error: bad_request (empty user, bad flag, bad lifetime).
local revoked = KEYS[1]
local channel = ARGV[1]
local user = ARGV[2]
local flag = ARGV[3]
local lifetime = uint(ARGV[4])
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
local latest = until_ms
local held = redis.call('HGETALL', revoked)
for i = 1, #held, 2 do
  local field, value = held[i], held[i + 1]
  local till = tonumber(string.match(value, ':(%d+)$') or '0')
  if field ~= user then
    if till <= now then
      redis.call('HDEL', revoked, field)
    elseif till > latest then
      latest = till
    end
  end
end
redis.call('HSET', revoked, user, now .. ':' .. until_ms)
redis.call('PEXPIREAT', revoked, latest)
local n = redis.call('PUBLISH', channel, 'r ' .. now .. ' ' .. until_ms .. ' ' .. user)
return {now, until_ms, n}
