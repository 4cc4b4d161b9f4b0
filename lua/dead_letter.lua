-- dead_letter.lua: marks a message the caller holds the lease of as dead, so no worker
-- claims it again until it is replayed, and (on a single Redis) adds its dead-letter entry
-- in the same step: a mark the script refuses writes no entry, so a message is listed once.
-- On Redis Cluster the stream is in another slot: the caller adds the entry
-- (dead_letter_add.lua) only after this script marked the message (a crash in between
-- leaves a message marked dead that `dead-letters list` does not show; never one listed
-- twice or listed and still deliverable).
-- KEYS[1] the record's bucket NS:{bus:N}:c:<source>:<id div 524288> (a hash, as described in
--   claim.lua; a string key holding one record is accepted too, with an empty field);
--   KEYS[2] (a single Redis only) the dead-letter stream NS:dead-letters
-- ARGV[1] owner token, ARGV[2] reason, ARGV[3] dedup window ms, ARGV[4] the record's field
-- in the bucket ('' = KEYS[1] is a string); with KEYS[2]: ARGV[5] the stream's maxlen,
-- ARGV[6] id, ARGV[7] user, ARGV[8] src, ARGV[9] attempts, ARGV[10] the bus message line
-- Returns {1, entries trimmed from the stream} when marked, {0, 0} when the caller no longer
-- holds a live lease (nothing written).
local bucket = KEYS[1]
local stream = KEYS[2]
local caller = ARGV[1]
local reason = ARGV[2]
local dedup_window = ARGV[3]
local field_arg = ARGV[4]
local maxlen = ARGV[5]
local id = ARGV[6]
local user = ARGV[7]
local src = ARGV[8]
local record_attempts = ARGV[9]
local line = ARGV[10]
local field = field_arg or ''
if stream and (not uint(maxlen) or #ARGV ~= 10) then
  return redis.error_reply('bad_request maxlen, id, user, src, attempts, m expected')
end
local v
if field == '' then v = redis.call('GET', bucket) else v = redis.call('HGET', bucket, field) end
local owner, till, attempts = lease_of(v)
if not owner or owner ~= caller or till < now_ms() then return {0, 0} end
local dead = dead_record(attempts, reason)
if field == '' then
  redis.call('SET', bucket, dead, 'PX', tonumber(dedup_window))
else
  -- The bucket lives a window after its last write (claim.lua), so the mark does too.
  redis.call('HSET', bucket, field, dead)
  redis.call('PEXPIRE', bucket, tonumber(dedup_window))
end
local trimmed = 0
if stream then
  trimmed = add_dead_letter(stream, maxlen, id, user, src, reason, record_attempts, line)
end
return {1, trimmed}
