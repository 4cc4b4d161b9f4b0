-- ack.lua: the user has seen everything up to an offset.
-- KEYS[1] NS:{bus:N}:u:U:meta (U's keys are in its bus shard's slot)
-- ARGV[1] offset (non-negative integer)
-- ARGV[2] optional: the epoch the offset belongs to; when given and not the stored epoch,
--         nothing changes (an offset of an earlier epoch says nothing about this one)
-- Returns the stored acked offset: max(stored acked, min(offset, stored offset)), so it
-- never decreases and never passes the last delivered offset.
-- Error: bad_request (not a non-negative integer).
local meta = KEYS[1]
local offset = ARGV[1]
local epoch = ARGV[2]
if type(offset) ~= 'string' or not string.match(offset, '^%d+$') or #offset > 15 then
  return redis.error_reply('bad_request offset must be a non-negative integer')
end
local want = tonumber(offset)
local m = redis.call('HMGET', meta, 'epoch', 'offset', 'acked')
local acked = tonumber(m[3]) or 0
if epoch ~= nil and epoch ~= '' and epoch ~= m[1] then
  return acked
end
local last = tonumber(m[2]) or 0
local new = math.min(want, last)
if new > acked then
  redis.call('HSET', meta, 'acked', string.format('%d', new))
  acked = new
end
return acked
