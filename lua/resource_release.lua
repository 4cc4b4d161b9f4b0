-- resource_release.lua: the holder of a resource is done; it becomes free again
-- (at the tail of the free order) and the leader is woken to hand it on.
-- KEYS[1] res:meta, KEYS[2] res:free, KEYS[3] res:seq, KEYS[4] res:holder, KEYS[5] assigned,
-- KEYS[6] pending, KEYS[7] pending:ids (optional: the holder's acceptance ends too),
-- KEYS[8] admissions (optional, with KEYS[7]: the assignment's record becomes "released")
-- ARGV[1] resource id, ARGV[2] wake channel, ARGV[3] queue name
-- Returns 1. Errors: not_found (unknown id), not_assigned (the resource is free).
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[1], id) == 0 then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
local holder = redis.call('HGET', KEYS[4], id)
local assignment = holder and KEYS[7] and redis.call('HGET', KEYS[5], holder) == id and
  redis.call('HGET', KEYS[7], holder)
if not drop_holder(KEYS[4], KEYS[5], KEYS[6], KEYS[7], id) then
  return redis.error_reply('not_assigned resource ' .. id .. ' is not assigned')
end
if assignment then admission_state(KEYS[8], assignment, 'released') end
local order = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], order, id)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
