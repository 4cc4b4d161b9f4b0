-- replay.lua: `dead-letters replay ID` — re-drives a dead-lettered message once.
-- The claim record decides: the message is re-driven only when its record says dead
-- ("x:"), or when there is no record left (the mark expires with the dedup window; a listed
-- entry then stands for a message that was never delivered, because an entry is only ever
-- written together with the mark and removed together with the replay). The record becomes
-- "r:0" (released, no attempts: claimable at once, so claim.lua delivers the message once
-- however many copies of it are published), which refuses any further replay.
-- A single Redis (KEYS[2], KEYS[3] given): all of it in this one call: the record, the
-- message back into its outbox and onto the bus, and every listed entry of the id removed.
-- Redis Cluster (KEYS[1] only: the stream and the outbox are other slots): only the record
-- is decided and changed here; the caller then adds the message to its outbox, publishes
-- it and removes the entries. An interrupted cluster replay leaves "r:0" with the entries
-- still listed: running it again re-drives it again (harmless: the record dedups).
-- KEYS[1] the record's bucket (NS:{bus:N}:c:<source>:<bucket>; a string key holding one
--   record is accepted too, with an empty field); KEYS[2] NS:dead-letters, KEYS[3] the outbox
--   the message came from (a single Redis only; KEYS[3] may be left out when ARGV has no
--   entry ids)
-- ARGV[1] the record's field in the bucket ('' = KEYS[1] is a string), ARGV[2] dedup
-- window ms, ARGV[3] bus channel, ARGV[4] the bus message line to publish (its ts renewed
-- by the caller), ARGV[5..] the dead-letter entries (stream ids) of this id the caller found
-- Returns the number of dead-letter entries removed (a cluster: the number given).
-- Errors: not_dead (delivered, being delivered or already replayed: nothing written),
-- not_found (no dead-letter entry of the id), bad_request.
local bucket = KEYS[1]
local stream = KEYS[2]
local outbox = KEYS[3]
local field_arg = ARGV[1]
local window_arg = ARGV[2]
local channel = ARGV[3]
local m = ARGV[4]
local listed = rest(ARGV, 5)
local field = field_arg or ''
local window = uint(window_arg)
if not window or window == 0 or not channel or not m then
  return redis.error_reply('bad_request field, window, channel, message expected')
end
local entries = {}
for _, entry in ipairs(listed) do
  -- On a single Redis only the entries still there count (a concurrent replay removed them).
  if not stream or #redis.call('XRANGE', stream, entry, entry) > 0 then
    entries[#entries + 1] = entry
  end
end
if #entries > 0 and stream and not outbox then
  return redis.error_reply('bad_request the outbox key is missing')
end

local v
if field == '' then v = redis.call('GET', bucket) else v = redis.call('HGET', bucket, field) end
if v == false then v = nil end
local kind = read_record(v)
local replayed = released_record(0)
if kind ~= nil and kind ~= 'dead' and v ~= replayed then
  local what = 'being delivered or released'
  if kind == 'delivered' then what = 'delivered (offset ' .. (string.match(v, '^%d+') or v) .. ')' end
  return redis.error_reply('not_dead the message was ' .. what .. '; nothing replayed')
end
if #entries == 0 then
  if v == replayed then return redis.error_reply('not_dead the message was already replayed') end
  return redis.error_reply('not_found no dead letter with this id')
end

if field == '' then
  redis.call('SET', bucket, replayed, 'PX', window)
else
  redis.call('HSET', bucket, field, replayed)
  redis.call('PEXPIRE', bucket, window)
end
if not stream then return #entries end
redis.call('XADD', outbox, '*', 'm', m)
redis.call('PUBLISH', channel, m)
return redis.call('XDEL', stream, unpack(entries))
