-- resource_remove.lua: take a resource out of the pool (free or assigned). Its holder,
-- if any, no longer holds an assignment.
-- KEYS[1] res:meta, KEYS[2] res:free, KEYS[3] res:holder, KEYS[4] assigned,
-- KEYS[5] pending, KEYS[6] pending:ids (optional: the holder's acceptance ends too),
-- KEYS[7] admissions (optional, with KEYS[6]: the assignment's record becomes "released")
-- ARGV[1] resource id
-- Returns 1. Error: not_found.
local id = ARGV[1]
if redis.call('HDEL', KEYS[1], id) == 0 then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
redis.call('ZREM', KEYS[2], id)
local holder = redis.call('HGET', KEYS[3], id)
local assignment = holder and KEYS[6] and redis.call('HGET', KEYS[4], holder) == id and
  redis.call('HGET', KEYS[6], holder)
drop_holder(KEYS[3], KEYS[4], KEYS[5], KEYS[6], id)
if assignment then admission_state(KEYS[7], assignment, 'released') end
return 1
