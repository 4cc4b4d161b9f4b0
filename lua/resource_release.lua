-- resource_release.lua: the holder of a resource is done; it becomes free again
-- (at the tail of the free order) and the leader is woken to hand it on. Keys 1-7 are
-- resource_remove.lua's, in the same order.
-- Returns 1. Errors: not_found (unknown id), not_assigned (the resource is free).
local res_meta = KEYS[1]
local res_free = KEYS[2]
local res_holder = KEYS[3]
local assigned = KEYS[4]
local pending = KEYS[5]
local pending_ids = KEYS[6]   -- the holder's acceptance ends too
local admissions = KEYS[7]    -- the assignment's record becomes "released"
local res_seq = KEYS[8]
local id = ARGV[1]            -- resource id
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
