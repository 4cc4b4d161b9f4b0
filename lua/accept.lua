-- accept.lua: the user takes the resource of its assignment before the deadline. Runs
-- in the queue's slot, as expire.lua does, so between accept and expiry exactly one wins.
-- KEYS[1] pending (zset user -> accept_by), KEYS[2] pending:ids (hash user -> id),
-- KEYS[3] assigned (hash user -> resource), KEYS[4] admissions (optional: the record
-- becomes "accepted")
-- ARGV[1] user, ARGV[2] assignment id ("" = whatever the user holds)
-- Returns {id, resource}; accepting twice answers the same. Error: not_found when the user
-- holds no such assignment (never had one, released, or expired).
local pending = KEYS[1]
local pending_ids = KEYS[2]
local assigned = KEYS[3]
local admissions = KEYS[4]
local user = ARGV[1]
local want = ARGV[2]
local id = redis.call('HGET', pending_ids, user)
local resource = redis.call('HGET', assigned, user)
if not id or not resource or (want ~= '' and want ~= id) then
  return redis.error_reply('not_found ' .. user .. ' holds no assignment ' .. want)
end
redis.call('ZREM', pending, user)
admission_state(admissions, id, 'accepted')
return {id, resource}
