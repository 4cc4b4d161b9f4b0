-- resource_release.lua: the holder of a resource is done; it becomes free again
-- (at the tail of the free order) and the leader is woken to hand it on.
-- KEYS[1] res:meta, KEYS[2] res:free, KEYS[3] res:seq, KEYS[4] res:holder, KEYS[5] assigned,
-- KEYS[6] pending, KEYS[7] pending:ids (optional: the holder's acceptance ends too),
-- KEYS[8] admissions (optional, with KEYS[7]: the assignment's record becomes "released")
-- ARGV[1] resource id, ARGV[2] wake channel, ARGV[3] queue name
-- Returns 1. Errors: not_found (unknown id), not_assigned (the resource is free).
local res_meta = KEYS[1]
local res_free = KEYS[2]
local res_seq = KEYS[3]
local res_holder = KEYS[4]
local assigned = KEYS[5]
local pending = KEYS[6]
local pending_ids = KEYS[7]
local admissions = KEYS[8]
local id = ARGV[1]
local wake_channel = ARGV[2]
local queue = ARGV[3]
if redis.call('HEXISTS', res_meta, id) == 0 then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
local holder = redis.call('HGET', res_holder, id)
local assignment = holder and pending_ids and redis.call('HGET', assigned, holder) == id and
  redis.call('HGET', pending_ids, holder)
if not drop_holder(res_holder, assigned, pending, pending_ids, id) then
  return redis.error_reply('not_assigned resource ' .. id .. ' is not assigned')
end
if assignment then admission_state(admissions, assignment, 'released') end
local order = redis.call('INCR', res_seq)
redis.call('ZADD', res_free, order, id)
redis.call('PUBLISH', wake_channel, queue)
return 1
