-- resource_remove.lua: take a resource out of the pool (free or assigned). Its holder,
-- if any, no longer holds an assignment, and its lease ends. Keys 1-7 are
-- resource_release.lua's, in the same order.
-- Returns 1. Error: not_found.
local res_meta = KEYS[1]
local res_free = KEYS[2]
local res_holder = KEYS[3]
local assigned = KEYS[4]
local pending = KEYS[5]
local pending_ids = KEYS[6]   -- the holder's acceptance ends too
local admissions = KEYS[7]    -- the assignment's record becomes "released"
local leases = KEYS[8]        -- optional: zset user -> lease end (the holder's lease ends)
local id = ARGV[1]            -- resource id
if redis.call('HDEL', res_meta, id) == 0 then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
redis.call('ZREM', res_free, id)
local holder = redis.call('HGET', res_holder, id)
local assignment = holder and pending_ids and redis.call('HGET', assigned, holder) == id and
  redis.call('HGET', pending_ids, holder)
if drop_holder(res_holder, assigned, pending, pending_ids, id) and leases then
  redis.call('ZREM', leases, holder)
end
if assignment then admission_state(admissions, assignment, 'released') end
return 1
