-- dead_letter.lua: marks a message the caller holds the lease of as dead, so no worker
-- claims it again until it is replayed. The caller has already added it to the
-- dead-letter stream (first add, then mark: a crash in between leaves a message that is
-- both listed and still deliverable, never one that is lost).
-- KEYS[1] NS:{u:U}:c:<id> (the string record described in claim.lua)
-- ARGV[1] owner token, ARGV[2] reason, ARGV[3] dedup window ms
-- Returns 1 when marked, 0 when the caller no longer holds a live lease.
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 2) ~= 'l:' then return 0 end
local owner, till, attempts = string.match(v, '^l:(.*):(%d+):(%d+)$')
local now = now_ms()
if owner ~= ARGV[1] or tonumber(till) < now then return 0 end
redis.call('SET', KEYS[1], 'x:' .. attempts .. ':' .. ARGV[2], 'PX', tonumber(ARGV[3]))
return 1
