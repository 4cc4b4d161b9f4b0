-- dead_letter_add.lua: adds one entry to the dead-letter stream, trimmed to about maxlen
-- entries, and answers how many older entries the trim dropped (the caller counts them in
-- NS:stats dead_letters_trimmed). Used for an outbox entry that is not a bus message, and on
-- Redis Cluster after dead_letter.lua marked a message (the stream is in another slot).
-- KEYS[1] NS:dead-letters
-- ARGV[1] maxlen, ARGV[2] id, ARGV[3] user, ARGV[4] src, ARGV[5] reason, ARGV[6] attempts,
-- ARGV[7] the bus message line (or the raw outbox text)
-- Returns the number of entries trimmed. Error: bad_request (bad maxlen, argument count).
local stream = KEYS[1]
local maxlen = ARGV[1]
local id = ARGV[2]
local user = ARGV[3]
local src = ARGV[4]
local reason = ARGV[5]
local attempts = ARGV[6]
local line = ARGV[7]
if not uint(maxlen) or #ARGV ~= 7 then
  return redis.error_reply('bad_request maxlen, id, user, src, reason, attempts, m expected')
end
return add_dead_letter(stream, maxlen, id, user, src, reason, attempts, line)
