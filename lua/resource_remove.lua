-- resource_remove.lua: take a resource out of the pool (free or assigned). Its holder,
-- if any, no longer holds an assignment.
-- KEYS[1] res:meta, KEYS[2] res:free, KEYS[3] res:holder, KEYS[4] assigned,
-- KEYS[5] pending, KEYS[6] pending:ids (optional: the holder's acceptance ends too),
-- KEYS[7] admissions (optional, with KEYS[6]: the assignment's record becomes "released")
-- ARGV[1] resource id
-- Returns 1. Error: not_found.
local res_meta = KEYS[1]
local res_free = KEYS[2]
local res_holder = KEYS[3]
local assigned = KEYS[4]
local pending = KEYS[5]
local pending_ids = KEYS[6]
local admissions = KEYS[7]
local id = ARGV[1]
if redis.call('HDEL', res_meta, id) == 0 then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
redis.call('ZREM', res_free, id)
local holder = redis.call('HGET', res_holder, id)
local assignment = holder and pending_ids and redis.call('HGET', assigned, holder) == id and
  redis.call('HGET', pending_ids, holder)
drop_holder(res_holder, assigned, pending, pending_ids, id)
if assignment then admission_state(admissions, assignment, 'released') end
return 1
