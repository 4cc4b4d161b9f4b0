-- source.lua: the source index of a message source (a queue): allocated once, and kept by
-- the leaders that use it. A failover can lose the hash's last writes (an allocation, or
-- the name of an index in use); the leader that uses an index passes it, and this call
-- puts it back when no other source holds it, so two queues never keep one index.
-- Returns the index (integer, 16..4095). Indexes 0..15 are the bus shards.
-- Errors: bad_request (empty name, bad index), exhausted (no index left below 4096).
-- NS:sources: a hash "q:NAME" -> index, "i:INDEX" -> name, "next" -> the last index handed
-- out (readers take the "q:" fields).
local sources = KEYS[1]
local name = ARGV[1]     -- e.g. "q:default"
local held_arg = ARGV[2] -- the index the caller uses for the name ("" or absent: none)
if name == nil or name == '' then
  return redis.error_reply('bad_request source name is empty')
end
local held = uint(held_arg or '')
if held_arg and held_arg ~= '' and (not held or held < 16 or held > 4095) then
  return redis.error_reply('bad_request held index must be an integer 16..4095')
end
local have = redis.call('HGET', sources, name)
if have then
  return tonumber(have)
end
local last = tonumber(redis.call('HGET', sources, 'next') or '15') or 15
if last < 15 then last = 15 end
if held then
  -- The name was lost. Its index comes back unless another source took it since.
  local owner = redis.call('HGET', sources, 'i:' .. held)
  if not owner or owner == name then
    redis.call('HSET', sources, 'next', math.max(last, held), name, held, 'i:' .. held, name)
    return held
  end
end
-- The next index no source names (a restored one may stand beyond a rolled-back `next`).
local idx = last + 1
while idx <= 4095 and redis.call('HEXISTS', sources, 'i:' .. idx) == 1 do idx = idx + 1 end
if idx > 4095 then
  return redis.error_reply('exhausted no source index left (max 4095)')
end
redis.call('HSET', sources, 'next', idx, name, idx, 'i:' .. idx, name)
return idx
