-- resource_add.lua: add free resources to a queue's pool, all or nothing.
-- KEYS[1] NS:{q:Q}:res:meta (hash id -> meta JSON, "null" when none)
-- KEYS[2] NS:{q:Q}:res:free (zset id -> order in which it became free)
-- KEYS[3] NS:{q:Q}:res:seq  (string counter for that order)
-- ARGV[1] wake channel, ARGV[2] queue name, ARGV[3] meta JSON (validated) or "",
-- ARGV[4..] resource ids
-- Returns the number added. Error: exists <id> (a known id, or an id given twice;
-- nothing is added).
local res_meta = KEYS[1]
local res_free = KEYS[2]
local res_seq = KEYS[3]
local wake_channel = ARGV[1]
local queue = ARGV[2]
local meta = ARGV[3]
if meta == nil or meta == '' then meta = 'null' end
local n = #ARGV - 3
local seen = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if seen[id] or redis.call('HEXISTS', res_meta, id) == 1 then
    return redis.error_reply('exists ' .. id)
  end
  seen[id] = true
end
for i = 4, #ARGV do
  local id = ARGV[i]
  local order = redis.call('INCR', res_seq)
  redis.call('HSET', res_meta, id, meta)
  redis.call('ZADD', res_free, order, id)
end
if n > 0 then
  redis.call('PUBLISH', wake_channel, queue)
end
return n
