-- dead_letter.lua: marks a message the caller holds the lease of as dead, so no worker
-- claims it again until it is replayed. The caller has already added it to the
-- dead-letter stream (first add, then mark: a crash in between leaves a message that is
-- both listed and still deliverable, never one that is lost).
-- KEYS[1] the claim record's key: NS:{u:U}:c:<id> (a string, Redis Cluster) or its bucket
--   NS:c:<source>:<id div 524288> (a hash, a single Redis), as described in claim.lua
-- ARGV[1] owner token, ARGV[2] reason, ARGV[3] dedup window ms, ARGV[4] the record's field
-- in the bucket ('' = KEYS[1] is a string)
-- Returns 1 when marked, 0 when the caller no longer holds a live lease.
local field = ARGV[4] or ''
local v
if field == '' then v = redis.call('GET', KEYS[1]) else v = redis.call('HGET', KEYS[1], field) end
if not v or string.sub(v, 1, 2) ~= 'l:' then return 0 end
local owner, till, attempts = string.match(v, '^l:(.*):(%d+):(%d+)$')
local now = now_ms()
if owner ~= ARGV[1] or tonumber(till) < now then return 0 end
local dead = 'x:' .. attempts .. ':' .. ARGV[2]
if field == '' then
  redis.call('SET', KEYS[1], dead, 'PX', tonumber(ARGV[3]))
else
  -- The bucket lives a window after its last write (claim.lua), so the mark does too.
  redis.call('HSET', KEYS[1], field, dead)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
end
return 1
