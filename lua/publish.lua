-- publish.lua: a custom message to a user, through a bus shard's outbox and the bus.
-- KEYS[1] NS:{bus:N}:seq, KEYS[2] NS:{bus:N}:outbox,
-- KEYS[3] NS:{bus:N}:idem:<user>:<key> (without an idempotency key: the seq key again;
--         it is then not touched)
-- ARGV[1] user, ARGV[2] data JSON (validated; spliced verbatim), ARGV[3] source (shard N),
-- ARGV[4] has idem ("0"/"1"), ARGV[5] dedup window ms, ARGV[6] outbox maxlen,
-- ARGV[7] bus channel
-- Returns {id, duplicate}: duplicate 1 (nothing published) when the idempotency key was
-- seen inside the dedup window, with the first message's id.
-- Error: bad_request (bad number).
local function uint(v)
  if type(v) ~= 'string' or not string.match(v, '^%d+$') or #v > 15 then return nil end
  return tonumber(v)
end

local user, data = ARGV[1], ARGV[2]
local source = uint(ARGV[3])
local has_idem = ARGV[4] == '1'
local window = uint(ARGV[5])
local maxlen = uint(ARGV[6])
if not source or source > 4095 then
  return redis.error_reply('bad_request source must be an integer 0..4095')
end
if not window or not maxlen then
  return redis.error_reply('bad_request dedup window and maxlen must be integers')
end
if has_idem and window == 0 then
  return redis.error_reply('bad_request dedup window must be positive')
end
if data == nil or data == '' then
  return redis.error_reply('bad_request data is empty')
end

if has_idem then
  local first = redis.call('GET', KEYS[3])
  if first then return {first, 1} end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local seq = redis.call('INCR', KEYS[1])
local id = string.format('%.0f', seq * 4096 + source)
local msg = '{"id":"' .. id .. '","user":' .. cjson.encode(user) ..
  ',"kind":"message","data":' .. data .. ',"ts":' .. string.format('%.0f', now) ..
  ',"src":"bus:' .. string.format('%.0f', source) .. '"}'

redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*', 'id', id, 'user', user, 'm', msg)
redis.call('PUBLISH', ARGV[7], msg)
if has_idem then
  redis.call('SET', KEYS[3], id, 'PX', window)
end
return {id, 0}
