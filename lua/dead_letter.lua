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
local field = ARGV[4] or ''
local stream = KEYS[2]
if stream and (not uint(ARGV[5]) or #ARGV ~= 10) then
  return redis.error_reply('bad_request maxlen, id, user, src, attempts, m expected')
end
local v
if field == '' then v = redis.call('GET', KEYS[1]) else v = redis.call('HGET', KEYS[1], field) end
local owner, till, attempts = lease_of(v)
if not owner or owner ~= ARGV[1] or till < now_ms() then return {0, 0} end
local dead = dead_record(attempts, ARGV[2])
if field == '' then
  redis.call('SET', KEYS[1], dead, 'PX', tonumber(ARGV[3]))
else
  -- The bucket lives a window after its last write (claim.lua), so the mark does too.
  redis.call('HSET', KEYS[1], field, dead)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
end
local trimmed = 0
if stream then
  trimmed = add_dead_letter(stream, ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[2], ARGV[9], ARGV[10])
end
return {1, trimmed}
