-- claim.lua: the one arbiter of who processes a message (check and set in one step).
-- KEYS[1] NS:{u:U}:claim:<id> (hash: state leased|delivered, owner, until ms, attempts,
--         offset)
-- ARGV[1] owner token, ARGV[2] lease ms, ARGV[3] dedup window ms
-- Returns {"done", offset} when already delivered, {"dead", 0} when it was dead-lettered,
-- {"taken", 0} while another lease is live, else takes the lease: {"won", attempts}
-- (attempts counts every lease taken).
-- Error: bad_request (bad number, empty owner).
local function uint(v)
  if type(v) ~= 'string' or not string.match(v, '^%d+$') or #v > 15 then return nil end
  return tonumber(v)
end

local owner = ARGV[1]
local lease = uint(ARGV[2])
local window = uint(ARGV[3])
if owner == nil or owner == '' then
  return redis.error_reply('bad_request owner token is empty')
end
if not lease or lease == 0 or not window or window == 0 then
  return redis.error_reply('bad_request lease and dedup window must be positive integers')
end

local c = redis.call('HMGET', KEYS[1], 'state', 'until', 'offset')
local state, till, offset = c[1], tonumber(c[2]), tonumber(c[3])
if state == 'delivered' then
  return {'done', offset or 0}
end
if state == 'dead' then
  return {'dead', 0}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if state == 'leased' and till and till > now then
  return {'taken', 0}
end

redis.call('HSET', KEYS[1], 'state', 'leased', 'owner', owner,
           'until', string.format('%.0f', now + lease))
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('PEXPIRE', KEYS[1], window)
return {'won', attempts}
