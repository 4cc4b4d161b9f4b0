-- resource_add.lua: add free resources to a queue's pool, all or nothing.
-- Returns the number added. Error: exists <id> (a known id, or an id given twice;
-- nothing is added).
local res_meta = KEYS[1]      -- NS:{q:Q}:res:meta (hash id -> meta JSON, "null" when none)
local res_free = KEYS[2]      -- NS:{q:Q}:res:free (zset id -> order in which it became free)
local res_seq = KEYS[3]       -- NS:{q:Q}:res:seq  (string counter for that order)
local wake_channel = ARGV[1]
local queue = ARGV[2]
local meta = ARGV[3]          -- meta JSON (validated) or ""
local ids = rest(ARGV, 4)     -- the resource ids
if meta == nil or meta == '' then meta = 'null' end
local seen = {}
for _, id in ipairs(ids) do
  if seen[id] or redis.call('HEXISTS', res_meta, id) == 1 then
    return redis.error_reply('exists ' .. id)
  end
  seen[id] = true
end
for _, id in ipairs(ids) do
  local order = redis.call('INCR', res_seq)
  redis.call('HSET', res_meta, id, meta)
  redis.call('ZADD', res_free, order, id)
end
if #ids > 0 then
  redis.call('PUBLISH', wake_channel, queue)
end
return #ids
