-- assign_plan.lua: what assign.lua would assign now, read only, so that the leader can sign
-- the admission tokens first (core/admission_plan.hpp): the same first ARGV[1] waiting users
-- and free resources, the same stale heads dropped, the id sequence the ids come from.
-- KEYS[1] waiting, KEYS[2] assigned, KEYS[3] res:meta, KEYS[4] res:free, KEYS[5] res:holder,
-- KEYS[6] seq, KEYS[7] settings (a paused queue plans nothing, as assign.lua assigns nothing)
-- ARGV[1] the most assignments to make (1..1000; assign.lua's ARGV[8])
-- Returns {seq, stale, user1, resource1, user2, resource2, ...}: seq is the sequence's value
-- (assignment i gets the id (seq + i) * 4096 + source), stale how many heads assign.lua
-- would drop. Error: bad_request.
local waiting = KEYS[1]
local assigned = KEYS[2]
local res_meta = KEYS[3]
local res_free = KEYS[4]
local res_holder = KEYS[5]
local seq = KEYS[6]
local settings = KEYS[7]
local max_arg = ARGV[1]
local max = uint(max_arg)
if not max or max < 1 or max > 1000 then
  return redis.error_reply('bad_request batch size must be an integer 1..1000')
end
local current = redis.call('GET', seq) or '0'
if settings and redis.call('HGET', settings, 'paused') == '1' then return {current, 0} end
local heads = redis.call('ZRANGE', waiting, 0, max - 1)
if #heads == 0 then return {current, 0} end
local frees = redis.call('ZRANGE', res_free, 0, max - 1)
if #frees == 0 then return {current, 0} end
local holds = redis.call('HMGET', assigned, unpack(heads))
local users, stale = {}, 0
for i = 1, #heads do
  if holds[i] then stale = stale + 1 else users[#users + 1] = heads[i] end
end
local known = redis.call('HMGET', res_meta, unpack(frees))
local held = redis.call('HMGET', res_holder, unpack(frees))
local resources = {}
for i = 1, #frees do
  if known[i] and not held[i] then
    resources[#resources + 1] = frees[i]
  else
    stale = stale + 1
  end
end
local out = {current, stale}
for i = 1, math.min(#users, #resources) do
  out[#out + 1] = users[i]
  out[#out + 1] = resources[i]
end
return out
