-- dead_letter.lua: marks a message the caller holds the lease of as dead, so no worker
-- claims it again until it is replayed. The caller has already added it to the
-- dead-letter stream (first add, then mark: a crash in between leaves a message that is
-- both listed and still deliverable, never one that is lost).
-- KEYS[1] NS:{u:U}:claim:<id>
-- ARGV[1] owner token, ARGV[2] reason, ARGV[3] dedup window ms
-- Returns 1 when marked, 0 when the caller no longer holds a live lease.
local c = redis.call('HMGET', KEYS[1], 'state', 'owner', 'until')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if c[1] ~= 'leased' or c[2] ~= ARGV[1] or (tonumber(c[3]) or 0) < now then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'dead', 'reason', ARGV[2])
redis.call('HDEL', KEYS[1], 'until')
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
