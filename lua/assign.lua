-- assign.lua: a batch of assignments: the first waiting users (lowest tickets) get the
-- first free resources (lowest scores), one each, up to ARGV[8] of them. The batch is ONE
-- outbox entry and ONE bus message, a line per assignment (the layout of publish.lua), so
-- workers claim it with one call; one queue event tells gateways which tickets left.
-- KEYS[1] waiting, KEYS[2] assigned, KEYS[3] res:meta, KEYS[4] res:free,
-- KEYS[5] res:holder, KEYS[6] seq, KEYS[7] outbox, KEYS[8] fence,
-- KEYS[9] pending (zset user -> accept_by, +inf without an accept timeout: the users
-- assigned and not accepted), KEYS[10] pending:ids (hash user -> assignment
-- id, what `accept` checks), KEYS[11] events (queue_event in prelude.lua), KEYS[12] settings
-- (paused: nothing is assigned; accept_timeout_s: replaces ARGV[4]), KEYS[13] rate (hash:
-- assignments per 10 s bucket "<ms div 10000>", "first" and "last" assignment ms)
-- ARGV[1] queue name, ARGV[2] source index, ARGV[3] fencing token ("0" = none),
-- ARGV[4] accept timeout ms ("0" = none), ARGV[5] outbox retention ms
-- (older entries are trimmed, XADD MINID), ARGV[6] bus channel ("": not published here, the
-- bus message is returned last for the caller to publish), ARGV[7] wake channel,
-- ARGV[8] the most assignments to make (1..1000)
-- KEYS[14] admissions (hash id -> "state user resource"), KEYS[15] admissions:t
-- (zset id -> when its record goes, ms); ARGV[9] how long a record is kept, ms ("" or absent: no records)
-- KEYS[16] leases (zset user -> lease end ms: the live admissions of a queue with a
-- session length; settings session_s)
-- ARGV[10] planned count ("" or absent: no plan, data.admission is null), ARGV[11] with a
-- plan the base the plan's ids come from (assign_plan.lua); without one the least base of
-- the ids ("" or absent: none; the caller's highest sequence number used, prelude.lua
-- seq_floor), then per planned assignment i: ARGV[9 + 3i] user, ARGV[10 + 3i] resource,
-- ARGV[11 + 3i] its admission token (assign_plan.lua, core/admission_plan.hpp). A plan that
-- no longer holds (other heads, other free resources, another seq) assigns nothing and
-- returns {"stale"}.
-- Capacity (docs/capacity.md): the settings' rate (its clock), passes and max_active limit
-- how many are assigned; with passes a user beyond the free resources gets `pass:<n>`.
-- Returns a flat array, three items per assignment: id, user, resource (empty when nobody
-- waits or nothing is free), and with an empty bus channel the bus message after them. Fewer than ARGV[8] with users and resources left means stale
-- heads were dropped: call again.
-- Errors: fenced (a newer leader has acted on this queue), bad_request (bad number).
local waiting = KEYS[1]
local assigned = KEYS[2]
local res_meta = KEYS[3]
local res_free = KEYS[4]
local res_holder = KEYS[5]
local seq = KEYS[6]
local outbox = KEYS[7]
local fence = KEYS[8]
local pending = KEYS[9]
local pending_ids = KEYS[10]
local events = KEYS[11]
local settings = KEYS[12]
local rate = KEYS[13]
local admissions = KEYS[14]
local admissions_t = KEYS[15]
local leases = KEYS[16]
local queue = ARGV[1]
local source_arg = ARGV[2]
local token_arg = ARGV[3]
local timeout_arg = ARGV[4]
local retention_arg = ARGV[5]
local bus_channel = ARGV[6]
local wake_channel = ARGV[7]
local max_arg = ARGV[8]
local record_ms_arg = ARGV[9]
local planned_arg = ARGV[10]
local planned_seq = ARGV[11]
local source = uint(source_arg)
local token = uint(token_arg)
local timeout = uint(timeout_arg)
local retention = uint(retention_arg)
local max = uint(max_arg)
local record_ms = uint(record_ms_arg or '')
local planned = uint(planned_arg or '')
if not source or source > 4095 then
  return redis.error_reply('bad_request source must be an integer 0..4095')
end
if not token or not timeout or not retention then
  return redis.error_reply('bad_request fencing token, accept timeout and retention must be integers')
end
if not max or max < 1 or max > 1000 then
  return redis.error_reply('bad_request batch size must be an integer 1..1000')
end

if token ~= 0 then
  local refused = fence_refusal(fence, token, token_arg)
  if refused then return refused end
end

local now = now_ms()
local cfg = redis.call('HMGET', settings, 'paused', 'accept_timeout_s')
if uint(cfg[2]) then timeout = uint(cfg[2]) * 1000 end
local limit, passes, clock = capacity_at(settings, assigned, now)
-- Nothing assigned: the rate's clock banks what it cannot use (a pause owes nothing).
if cfg[1] == '1' then
  capacity_spent(settings, clock, 0, now)
  return {}
end

-- The heads of both lists. Stale heads (a waiting user who already holds an assignment, a
-- free resource that is unknown or held) cannot arise through the other scripts; they are
-- dropped here, at most one list's worth per call.
local heads = redis.call('ZRANGE', waiting, 0, max - 1, 'WITHSCORES')
local frees = {}
if #heads > 0 and limit ~= 0 then frees = redis.call('ZRANGE', res_free, 0, max - 1) end
if #heads == 0 or limit == 0 or (#frees == 0 and not passes) then
  capacity_spent(settings, clock, 0, now)
  return {}
end

local names = {}
for i = 1, #heads, 2 do names[#names + 1] = heads[i] end
local holds = redis.call('HMGET', assigned, unpack(names))
local users = {}
for i = 1, #names do
  if not holds[i] then users[#users + 1] = names[i] end
end
local resources, metas, stale_resources = {}, {}, {}
if #frees > 0 then
  local known = redis.call('HMGET', res_meta, unpack(frees))
  local held = redis.call('HMGET', res_holder, unpack(frees))
  for i = 1, #frees do
    if known[i] and not held[i] then
      resources[#resources + 1] = frees[i]
      metas[#resources] = known[i]
    else
      stale_resources[#stale_resources + 1] = frees[i]
    end
  end
end

-- Free resources first, then (with passes) passes, within the capacity's limit
-- (assign_plan.lua counts alike).
local stock = #resources
if limit and limit < stock then stock = limit end
local n = math.min(#users, stock)
if passes then n = math.min(#users, limit) end
-- Fewer than the clock allows for want of users (the whole line was read), of stock, or of
-- room under the cap: the clock banks the rest.
local idle = clock ~= nil and n < clock.allowed and
  (#names < max or (not passes and #frees < max) or (limit ~= nil and limit < clock.allowed))
if planned then
  -- More may be allowed now than when the plan was read: the plan's pairs go.
  if planned < n then n = planned end
  -- The plan's base (assign_plan.lua: the sequence or the clock, whichever is ahead) still
  -- holds while no id above it was taken since.
  local base = uint(planned_seq or '')
  local holds_plan = n == planned and base ~= nil and
    (tonumber(redis.call('GET', seq) or '0') or 0) <= base
  for i = 1, n do
    if not holds_plan then break end
    local resource = i <= stock and resources[i] or pass_name(base + i)
    holds_plan = users[i] == ARGV[9 + 3 * i] and resource == ARGV[10 + 3 * i]
  end
  if not holds_plan then return {'stale'} end
end
-- The paired users and the stale ones leave the waiting list; users beyond the pairs stay.
local left, left_tickets, stays = {}, {}, {}
for i = n + 1, #users do stays[users[i]] = true end
for i = 1, #heads, 2 do
  if not stays[heads[i]] then
    left[#left + 1] = heads[i]
    left_tickets[#left_tickets + 1] = heads[i + 1]
  end
end
if #stale_resources > 0 then redis.call('ZREM', res_free, unpack(stale_resources)) end
if #left > 0 then
  redis.call('ZREM', waiting, unpack(left))
  queue_event(events, wake_channel, queue, 'r', left_tickets)
end
capacity_spent(settings, clock, n, now, idle)
if n == 0 then return {} end

local accept_by = 'null'
local deadline = '+inf'
if timeout > 0 then
  accept_by = string.format('%d', now + timeout)
  deadline = accept_by
end
local lease_end = leases and lease_terms(settings, now)
local expires_at = lease_end and string.format('%d', lease_end) or 'null'
local first
if planned then
  first = uint(planned_seq)
  redis.call('SET', seq, string.format('%d', first + n))
else
  first = take_seq(seq, n, now, uint(planned_seq or ''))
end
local out, lines, freed, holders, user_resources, ids, deadlines = {}, {}, {}, {}, {}, {}, {}
local tail = ',"accept_by":' .. accept_by .. ',"expires_at":' .. expires_at .. '},"ts":' ..
  string.format('%d', now) .. '}'
local head = ',"src":' .. cjson.encode('q:' .. queue) ..
  ',"kind":"assignment","data":{"queue":' .. cjson.encode(queue) .. ',"resource":'
local lease_ends = {}
for i = 1, n do
  local user, resource = users[i], resources[i]
  local kind = '"resource"'
  if i > stock then
    resource = pass_name(first + i)
    kind = '"pass"'
  end
  local id = string.format('%d', (first + i) * 4096 + source)
  local meta = metas[i]
  if i > stock or not meta or meta == '' then meta = 'null' end
  local admission = 'null'
  if planned then admission = cjson.encode(ARGV[11 + 3 * i]) end
  -- The bus message layout of publish.lua: the frame tail is the suffix from ,"kind".
  lines[i] = '{"id":"' .. id .. '","user":' .. cjson.encode(user) .. head ..
    cjson.encode(resource) .. ',"kind":' .. kind .. ',"meta":' .. meta .. ',"admission":' ..
    admission .. tail
  if lease_end then lease_ends[2 * i - 1], lease_ends[2 * i] = expires_at, user end
  if i <= stock then freed[#freed + 1] = resource end
  user_resources[2 * i - 1], user_resources[2 * i] = user, resource
  holders[2 * i - 1], holders[2 * i] = resource, user
  ids[2 * i - 1], ids[2 * i] = user, id
  deadlines[2 * i - 1], deadlines[2 * i] = deadline, user
  out[3 * i - 2], out[3 * i - 1], out[3 * i] = id, user, resource
end
if #freed > 0 then redis.call('ZREM', res_free, unpack(freed)) end
if lease_end then redis.call('ZADD', leases, unpack(lease_ends)) end
redis.call('HSET', assigned, unpack(user_resources))
redis.call('HSET', res_holder, unpack(holders))
redis.call('HSET', pending_ids, unpack(ids))
redis.call('ZADD', pending, unpack(deadlines))
-- The report: admissions in this minute, each one's wait (from the minute its ticket was
-- handed out: join.lua's index), the peak of live admissions and the capacity settings.
do
  local minute = math.floor(now / 60000)
  local report = report_key(waiting, minute)
  local index = string.sub(report, 1, string.find(report, ':report:', 1, true)) .. 'report:tickets'
  local ticket_of = {}
  for i = 1, #heads, 2 do ticket_of[heads[i]] = heads[i + 1] end
  local buckets, longest = {}, 0
  for i = 1, n do
    local from = redis.call('ZREVRANGEBYSCORE', index, ticket_of[users[i]] or '-inf', '-inf',
                            'LIMIT', 0, 1)[1]
    local wait = from and (minute - tonumber(from)) * 60 or 0
    if wait > longest then longest = wait end
    local b = report_bucket('w:', wait)
    buckets[b] = (buckets[b] or 0) + 1
  end
  redis.call('HINCRBY', report, 'admitted', n)
  for b, count in pairs(buckets) do redis.call('HINCRBY', report, b, count) end
  local seen = redis.call('HMGET', report, 'wait_max', 'active_peak')
  local live = redis.call('HLEN', assigned)
  local caps = redis.call('HMGET', settings, 'rate_per_min', 'max_active')
  redis.call('HSET', report, 'wait_max', string.format('%d', math.max(longest, tonumber(seen[1]) or 0)),
             'active_peak', string.format('%d', math.max(live, tonumber(seen[2]) or 0)),
             'rate_per_min', caps[1] or '0', 'max_active', caps[2] or '0')
  redis.call('PEXPIRE', report, report_keep_ms)
end

if admissions and record_ms then
  local records, until_ms = {}, {}
  local keep_until = string.format('%d', math.max(now + record_ms,
                                                  (lease_end or 0) + record_margin_ms))
  for i = 1, n do
    records[2 * i - 1], records[2 * i] = out[3 * i - 2], 'assigned ' .. users[i] .. ' ' .. out[3 * i]
    until_ms[2 * i - 1], until_ms[2 * i] = keep_until, out[3 * i - 2]
  end
  redis.call('HSET', admissions, unpack(records))
  redis.call('ZADD', admissions_t, unpack(until_ms))
  -- Records past their time go, a bounded number per call (twice as many as were added).
  local old = redis.call('ZRANGEBYSCORE', admissions_t, '-inf', now, 'LIMIT', 0, 2 * n)
  if #old > 0 then
    redis.call('HDEL', admissions, unpack(old))
    redis.call('ZREM', admissions_t, unpack(old))
  end
end

-- The assignment rate (core/assignment_rate): a window counted from its first assignment,
-- restarted after 5 idle minutes; buckets older than that are dropped.
local bucket = math.floor(now / 10000)
local last = tonumber(redis.call('HGET', rate, 'last') or '0')
if now - last > 300000 then
  redis.call('DEL', rate)
  redis.call('HSET', rate, 'first', string.format('%d', now))
end
redis.call('HINCRBY', rate, string.format('%d', bucket), n)
redis.call('HSET', rate, 'last', string.format('%d', now))
if redis.call('HLEN', rate) > 40 then
  for _, f in ipairs(redis.call('HKEYS', rate)) do
    local b = tonumber(f)
    if f ~= 'first' and f ~= 'last' and (not b or b < bucket - 30) then redis.call('HDEL', rate, f) end
  end
end

local payload = table.concat(lines, '\n')
redis.call('XADD', outbox, 'MINID', '~', string.format('%d', now - retention), '*', 'm', payload)
if bus_channel == '' then
  -- The caller publishes (--wait-replicas: once the slot's writes are on the replicas).
  out[#out + 1] = payload
else
  redis.call('PUBLISH', bus_channel, payload)
end
return out
