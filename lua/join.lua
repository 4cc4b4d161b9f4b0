-- join.lua: add a user at the tail of a queue's waiting list.
-- KEYS[1] NS:{q:Q}:waiting (zset user -> ticket)
-- KEYS[2] NS:{q:Q}:assigned (hash user -> resource)
-- KEYS[3] NS:{q:Q}:ticket (string counter)
-- KEYS[4] NS:{q:Q}:registered (set by every leader that runs the queue)
-- KEYS[5] NS:{q:Q}:events (the queue's event sequence, queue_event in prelude.lua)
-- KEYS[6] NS:{q:Q}:stats (counters), KEYS[7] NS:{q:Q}:pow:TOKEN (optional: the single use
-- of a proof-of-work solution the gateway verified)
-- ARGV[1] user, ARGV[2] wake channel, ARGV[3] queue name, ARGV[4] ms the single-use mark
-- lives (with KEYS[7])
-- Returns {position (1 = next), ticket, event sequence}: the position is the one after
-- that event.
-- Errors: not_found (no leader has ever run the queue: nothing is written),
-- already_queued, already_assigned, bad_request (the proof of work was used already:
-- counted in stats refused_pow).
local waiting = KEYS[1]
local assigned = KEYS[2]
local ticket_counter = KEYS[3]
local registered = KEYS[4]
local events = KEYS[5]
local stats = KEYS[6]
local pow_used = KEYS[7]
local user = ARGV[1]
local wake = ARGV[2]
local queue = ARGV[3]
local pow_ttl = ARGV[4]
if redis.call('EXISTS', registered) == 0 then
  return redis.error_reply('not_found queue ' .. queue .. ' is not run by any leader')
end
if redis.call('ZSCORE', waiting, user) then
  return redis.error_reply('already_queued ' .. user .. ' is already queued')
end
if redis.call('HEXISTS', assigned, user) == 1 then
  return redis.error_reply('already_assigned ' .. user .. ' already holds an assignment')
end
if pow_used then
  local ttl = uint(pow_ttl)
  if not ttl or ttl < 1 then
    return redis.error_reply('bad_request the proof of work mark needs a ttl')
  end
  if not redis.call('SET', pow_used, '1', 'NX', 'PX', ttl) then
    redis.call('HINCRBY', stats, 'refused_pow', 1)
    return redis.error_reply('bad_request this proof of work was used already')
  end
end
local ticket = redis.call('INCR', ticket_counter)
redis.call('ZADD', waiting, ticket, user)
local position = redis.call('ZRANK', waiting, user) + 1
local seq = queue_event(events, wake, queue, 'j', {ticket})
return {position, ticket, seq}
