-- expire.lua: ends the assignments whose accept deadline has passed (reason "offer") or
-- whose lease ran out (reason "lease"), up to ARGV[7] of them: each resource is free again
-- (and goes to the next user; a pass is simply gone), each user gets an `expired` message.
-- The batch is ONE outbox entry and ONE bus message, a line per expiry.
-- KEYS[1] pending, KEYS[2] pending:ids, KEYS[3] assigned, KEYS[4] res:free, KEYS[5] res:seq,
-- KEYS[6] res:holder, KEYS[7] seq, KEYS[8] outbox, KEYS[9] fence, KEYS[10] admissions
-- (optional: each record becomes "expired"), KEYS[11] leases (optional: zset user -> lease end)
-- ARGV[1] queue, ARGV[2] source, ARGV[3] fencing token ("0" = none), ARGV[4] outbox
-- retention ms, ARGV[5] bus channel ("": the bus message is returned last, as assign.lua's),
-- ARGV[6] wake channel, ARGV[7] the most to expire
-- (1..1000; default 1), ARGV[8] the least base of the ids ("" or absent: none; prelude.lua
-- seq_floor)
-- Returns a flat array, four items per expiry: expired message id, user, resource,
-- assignment id (empty when none is due). Error: fenced, bad_request.
local pending = KEYS[1]
local pending_ids = KEYS[2]
local assigned = KEYS[3]
local res_free = KEYS[4]
local res_seq = KEYS[5]
local res_holder = KEYS[6]
local seq = KEYS[7]
local outbox = KEYS[8]
local fence = KEYS[9]
local admissions = KEYS[10]
local leases = KEYS[11]
local queue = ARGV[1]
local source_arg = ARGV[2]
local token_arg = ARGV[3]
local retention_arg = ARGV[4]
local bus_channel = ARGV[5]
local wake_channel = ARGV[6]
local max_arg = ARGV[7]
local least_arg = ARGV[8]
local source = uint(source_arg)
local token = uint(token_arg)
local retention = uint(retention_arg) or 0
local max = uint(max_arg or '1')
if not source or source > 4095 or not token then
  return redis.error_reply('bad_request source and token must be integers')
end
if not max or max < 1 or max > 1000 then
  return redis.error_reply('bad_request batch size must be an integer 1..1000')
end
if token ~= 0 then
  local refused = fence_refusal(fence, token, token_arg)
  if refused then return refused end
end

local now = now_ms()
-- Leases first (an offer whose lease ends first ends as a lease), then offers.
local due, reasons = {}, {}
if leases then
  for _, u in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, max)) do
    due[#due + 1], reasons[u] = u, 'lease'
  end
end
if #due < max then
  for _, u in ipairs(redis.call('ZRANGEBYSCORE', pending, '-inf', now, 'LIMIT', 0, max - #due)) do
    if not reasons[u] then due[#due + 1], reasons[u] = u, 'offer' end
  end
end
if #due == 0 then return {} end
local assignments = redis.call('HMGET', pending_ids, unpack(due))
local resources = redis.call('HMGET', assigned, unpack(due))
redis.call('ZREM', pending, unpack(due))
redis.call('HDEL', pending_ids, unpack(due))
if leases then redis.call('ZREM', leases, unpack(due)) end

local ends = {}  -- {user, resource, assignment id, reason} with a resource to take back
for i = 1, #due do
  if resources[i] then
    ends[#ends + 1] = {due[i], resources[i], assignments[i] or '', reasons[due[i]]}
  end
end
if #ends == 0 then return {} end

local out, lines = {}, {}
local first = take_seq(seq, #ends, now, uint(least_arg or ''))
local ts = string.format('%d', now)
for i, e in ipairs(ends) do
  local user, resource, assignment = e[1], e[2], e[3]
  admission_state(admissions, assignment, 'expired')
  redis.call('HDEL', assigned, user)
  if redis.call('HGET', res_holder, resource) == user then
    redis.call('HDEL', res_holder, resource)
    if not is_pass(resource) then
      redis.call('ZADD', res_free, redis.call('INCR', res_seq), resource)
    end
  end
  local id = string.format('%d', (first + i) * 4096 + source)
  lines[i] = '{"id":"' .. id .. '","user":' .. cjson.encode(user) ..
    ',"src":' .. cjson.encode('q:' .. queue) ..
    ',"kind":"expired","data":{"id":' .. cjson.encode(assignment) .. ',"queue":' ..
    cjson.encode(queue) .. ',"resource":' .. cjson.encode(resource) .. ',"reason":"' .. e[4] ..
    '"},"ts":' .. ts .. '}'
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = id, user, resource, assignment
end
local offers, lapsed = {}, {}
for _, e in ipairs(ends) do
  if e[4] == 'lease' then lapsed[#lapsed + 1] = e[3] else offers[#offers + 1] = e[3] end
end
report_ends(pending, now, 'offers_expired', offers)
report_ends(pending, now, 'leases_expired', lapsed)
local payload = table.concat(lines, '\n')
local minid = string.format('%d', now - retention)
redis.call('XADD', outbox, 'MINID', '~', minid, '*', 'm', payload)
if bus_channel == '' then
  out[#out + 1] = payload  -- the caller publishes it (as assign.lua)
else
  redis.call('PUBLISH', bus_channel, payload)
end
redis.call('PUBLISH', wake_channel, queue)
return out
