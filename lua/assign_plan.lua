-- assign_plan.lua: what assign.lua would assign now, read only, so that the leader can sign
-- the admission tokens first (core/admission_plan.hpp): the same first ARGV[1] waiting users
-- and free resources, the same stale heads dropped, the id sequence the ids come from.
-- KEYS[1] waiting, KEYS[2] assigned, KEYS[3] res:meta, KEYS[4] res:free, KEYS[5] res:holder,
-- KEYS[6] seq, KEYS[7] settings (a paused queue plans nothing, as assign.lua assigns nothing;
-- the rate, passes and active cap limit the plan as they limit assign.lua)
-- ARGV[1] the most assignments to make (1..1000; assign.lua's ARGV[8]), ARGV[2] the least
-- base of the ids ("" or absent: none; prelude.lua seq_floor)
-- Returns {seq, stale, user1, resource1, user2, resource2, ...}: seq is the base the ids
-- come from, the sequence, the clock or ARGV[2], whichever is ahead (prelude.lua seq_base;
-- assignment i gets the id (seq + i) * 4096 + source), stale how many heads assign.lua
-- would drop. Error: bad_request.
local waiting = KEYS[1]
local assigned = KEYS[2]
local res_meta = KEYS[3]
local res_free = KEYS[4]
local res_holder = KEYS[5]
local seq = KEYS[6]
local settings = KEYS[7]
local max_arg = ARGV[1]
local least_arg = ARGV[2]
local max = uint(max_arg)
if not max or max < 1 or max > 1000 then
  return redis.error_reply('bad_request batch size must be an integer 1..1000')
end
local now = now_ms()
local base = seq_base(seq, now, uint(least_arg or ''))
local current = string.format('%d', base)
if settings and redis.call('HGET', settings, 'paused') == '1' then return {current, 0} end
local heads = redis.call('ZRANGE', waiting, 0, max - 1)
if #heads == 0 then return {current, 0} end
local limit, passes = nil, false
if settings then limit, passes = capacity_at(settings, assigned, now) end
if limit == 0 then return {current, 0} end
local frees = redis.call('ZRANGE', res_free, 0, max - 1)
if #frees == 0 and not passes then return {current, 0} end
local holds = redis.call('HMGET', assigned, unpack(heads))
local users, stale = {}, 0
for i = 1, #heads do
  if holds[i] then stale = stale + 1 else users[#users + 1] = heads[i] end
end
local resources = {}
if #frees > 0 then
  local known = redis.call('HMGET', res_meta, unpack(frees))
  local held = redis.call('HMGET', res_holder, unpack(frees))
  for i = 1, #frees do
    if known[i] and not held[i] then
      resources[#resources + 1] = frees[i]
    else
      stale = stale + 1
    end
  end
end
-- The same count and order as assign.lua: free resources first, then passes (named by the
-- id sequence, so the plan and the call name them alike), within the capacity's limit.
local stock = #resources
if limit and limit < stock then stock = limit end
local n = math.min(#users, stock)
if passes then n = math.min(#users, limit) end
local out = {current, stale}
for i = 1, n do
  out[#out + 1] = users[i]
  out[#out + 1] = i <= stock and resources[i] or pass_name(base + i)
end
return out
