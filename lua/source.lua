-- source.lua: the source index of a message source (a queue), allocated once.
-- KEYS[1] NS:sources (hash: "q:NAME" -> index, "next" -> last index handed out)
-- ARGV[1] name, e.g. "q:default"
-- Returns the index (integer, 16..4095). Indexes 0..15 are the bus shards.
-- Errors: bad_request (empty name), exhausted (no index left below 4096).
local sources = KEYS[1]
local name = ARGV[1]
if name == nil or name == '' then
  return redis.error_reply('bad_request source name is empty')
end
local have = redis.call('HGET', sources, name)
if have then
  return tonumber(have)
end
local last = tonumber(redis.call('HGET', sources, 'next') or '15') or 15
if last < 15 then last = 15 end
local idx = last + 1
if idx > 4095 then
  return redis.error_reply('exhausted no source index left (max 4095)')
end
redis.call('HSET', sources, 'next', idx, name, idx)
return idx
