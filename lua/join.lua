-- join.lua: add a user at the tail of a queue's waiting list.
-- KEYS[1] NS:{q:Q}:waiting (zset user -> ticket)
-- KEYS[2] NS:{q:Q}:assigned (hash user -> resource)
-- KEYS[3] NS:{q:Q}:ticket (string counter)
-- KEYS[4] NS:{q:Q}:registered (set by every leader that runs the queue)
-- KEYS[5] NS:{q:Q}:events (the queue's event sequence, queue_event in prelude.lua)
-- ARGV[1] user, ARGV[2] wake channel, ARGV[3] queue name
-- Returns {position (1 = next), ticket, event sequence}: the position is the one after
-- that event.
-- Errors: not_found (no leader has ever run the queue: nothing is written),
-- already_queued, already_assigned.
local user = ARGV[1]
if redis.call('EXISTS', KEYS[4]) == 0 then
  return redis.error_reply('not_found queue ' .. ARGV[3] .. ' is not run by any leader')
end
if redis.call('ZSCORE', KEYS[1], user) then
  return redis.error_reply('already_queued ' .. user .. ' is already queued')
end
if redis.call('HEXISTS', KEYS[2], user) == 1 then
  return redis.error_reply('already_assigned ' .. user .. ' already holds an assignment')
end
local ticket = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[1], ticket, user)
local position = redis.call('ZRANK', KEYS[1], user) + 1
local seq = queue_event(KEYS[5], ARGV[2], ARGV[3], 'j', {ticket})
return {position, ticket, seq}
