-- prelude.lua: helpers every script starts with (cmake/embed_scripts.cmake prepends this
-- file to each lua/*.lua when it embeds them; tests/integration/lua_smoke.sh does the same).

-- A non-negative integer argument (at most 15 digits), or nil.
local function uint(v)
  if type(v) ~= 'string' or not string.match(v, '^%d+$') or #v > 15 then return nil end
  return tonumber(v)
end

-- Redis's clock in ms (scripts never trust the caller's clock).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A queue's message ids (assign.lua, expire.lua; assign_plan.lua plans with the same base):
-- id = seq * 4096 + source, where the sequence never stands below the clock, 4 per ms
-- since 2026-01-01 UTC. A failover that loses the queue slot's last writes rolls `seq` back
-- but not the clock, so the ids made after it are new ones, not a repeat of ids that were
-- already heard and delivered (the users' claim records live in other slots and keep
-- theirs). 4 per ms outruns any sustained assignment rate of one queue; ids stay below
-- 2^53 (exact in Lua and in JavaScript) until 2043. A burst (an opening assigns thousands
-- at once) runs the sequence ahead of the clock for a while; the process that made those
-- ids passes the highest sequence number it used ("least", core/id_floor.hpp), so a
-- rollback in that while does not bring them back either.
local function seq_floor(now)
  return (now - 1767225600000) * 4
end

-- The base of the next ids in sequence key `seq_key` at time `now` (ms): max(stored, clock,
-- least), `least` the caller's highest sequence number used (nil: none).
local function seq_base(seq_key, now, least)
  return math.max(tonumber(redis.call('GET', seq_key) or '0') or 0, seq_floor(now), least or 0)
end

-- Takes n ids from `seq_key`: returns the base b (the ids are (b + 1..n) * 4096 + source).
local function take_seq(seq_key, n, now, least)
  local base = seq_base(seq_key, now, least)
  redis.call('SET', seq_key, string.format('%d', base + n))
  return base
end

-- Claim records (claim.lua; read in C++ by core/lua/claim_record.cpp), written and read only
-- through these:
--   "<offset>" or "<offset>:<attempts>"   delivered (attempts shown when more than 1)
--   "l:<owner>:<until ms>:<attempts>"     leased (a dead-letter in progress, or a delivery
--                                         that failed: retried after the lease)
--   "r:<attempts>"                        lease handed back (release.lua; "r:0": replayed)
--   "x:<attempts>:<reason>"               dead-lettered (dead_letter.lua)
--   "p:<offset>:<attempts>"               delivered, its frame not yet published (claim.lua
--                                         in mode 'n'; published.lua makes it delivered once
--                                         the frame is out)
-- `offset` stays the caller's string (see claim.lua on formatting numbers).
local function delivered_record(offset, attempts)
  if attempts > 1 then return offset .. ':' .. attempts end
  return offset
end

local function unpublished_record(offset, attempts)
  return 'p:' .. offset .. ':' .. attempts
end

-- The bucket (a hash, in the claim key's slot) that holds the claim record of message
-- `id` (decimal) named by claim key `ck`: NS:{bus:N}:c:<source>:<id div 524288>
-- (core/keys.cpp claim_bucket names the same key). nil for an id that is not decimal or
-- a key without a hash tag.
local function record_bucket(ck, id)
  local n = string.match(id, '^%d+$') and tonumber(id)
  local close = string.find(ck, '}', 1, true)
  if not n or not close then return nil end
  return string.sub(ck, 1, close) .. ':c:' .. string.format('%d:%d', n % 4096, math.floor(n / 524288))
end

local function lease_record(owner, until_ms, attempts)
  return 'l:' .. owner .. ':' .. string.format('%d', until_ms) .. ':' .. attempts
end

local function released_record(attempts)
  return 'r:' .. attempts
end

local function dead_record(attempts, reason)
  return 'x:' .. attempts .. ':' .. reason
end

-- What record `v` says: 'delivered' and the offset (and, for a frame not yet published,
-- its attempts and true), 'leased' and the lease's end (ms) and attempts, 'released' (nil,
-- attempts) or 'dead' (nil, attempts); nil when there is none. The second byte tells a
-- delivered record ("<offset>...", no ':' there) from the others.
local function read_record(v)
  if not v then return nil end
  local b1, b2 = string.byte(v, 1, 2)
  if b2 == 58 then
    if b1 == 112 then  -- p:<offset>:<attempts>
      local off, a = string.match(v, '^p:(%d+):(%d+)$')
      return 'delivered', tonumber(off), tonumber(a), true
    elseif b1 == 108 then  -- l:<owner>:<until>:<attempts>
      local till, a = string.match(v, ':(%d+):(%d+)$')
      return 'leased', tonumber(till), tonumber(a)
    elseif b1 == 114 then  -- r:<attempts>
      return 'released', nil, tonumber(string.sub(v, 3))
    elseif b1 == 120 then  -- x:<attempts>:<reason>
      return 'dead', nil, tonumber(string.match(v, '^x:(%d+)'))
    end
  end
  -- "<offset>[:<attempts>]" (a one-digit offset with attempts too: "5:2")
  return 'delivered', tonumber(string.match(v, '^%d+'))
end

-- The owner, lease end (ms) and attempts of a lease record; nil for any other record.
local function lease_of(v)
  if not v or string.sub(v, 1, 2) ~= 'l:' then return nil end
  local owner, till, attempts = string.match(v, '^l:(.*):(%d+):(%d+)$')
  if not owner then return nil end
  return owner, tonumber(till), tonumber(attempts)
end

-- Resource `id` is no longer held: forget its holder, and when that user's assignment is
-- this resource, end the assignment and its pending acceptance. Returns the holder or nil.
local function drop_holder(holder, assigned, pending, pending_ids, id)
  local user = redis.call('HGET', holder, id)
  if not user then return nil end
  redis.call('HDEL', holder, id)
  if redis.call('HGET', assigned, user) == id then
    redis.call('HDEL', assigned, user)
    if pending_ids then
      redis.call('ZREM', pending, user)
      redis.call('HDEL', pending_ids, user)
    end
  end
  return user
end

-- The token bucket at `key` (a hash {tokens, ts}, shared by every gateway: the publish API's
-- limit per API key, docs/security.md) takes `cost` tokens when it holds so many. A new
-- bucket starts full; the key expires once the bucket would be full again. Returns 1, 0
-- when the tokens were taken; 0 and the ms until they will be there when not (nothing
-- taken).
local function take_tokens(key, rate, burst, cost)
  local now = now_ms()
  local m = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens = tonumber(m[1]) or burst
  local ts = tonumber(m[2]) or now
  if now > ts then
    tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
    ts = now
  end
  local taken, wait = 0, 0
  if tokens >= cost then
    tokens = tokens - cost
    taken = 1
  else
    wait = math.ceil((cost - tokens) * 1000 / rate)
  end
  redis.call('HSET', key, 'tokens', string.format('%.3f', tokens), 'ts', string.format('%d', ts))
  redis.call('PEXPIRE', key, math.ceil(burst * 1000 / rate) + 1000)
  return taken, wait
end

-- A change of a queue's waiting list, told to every gateway and the leader on the wake
-- channel as "QUEUE SEQ KIND TICKET...": SEQ the queue's next event number (KEYS `events`),
-- KIND 'j' (joined: one ticket) or 'r' (removed: left or assigned). Gateways keep their
-- users' positions from these events (docs/data-model.md, "Queue events"). Returns SEQ.
local function queue_event(events, wake, queue, kind, tickets)
  local seq = redis.call('INCR', events)
  local parts = {queue, string.format('%d', seq), kind}
  for i = 1, #tickets do parts[#parts + 1] = string.format('%d', tickets[i]) end
  redis.call('PUBLISH', wake, table.concat(parts, ' '))
  return seq
end

-- Adds an entry to the dead-letter stream `stream` (trimmed to about `maxlen` entries) with
-- the fields id, user, src, reason, attempts, m. Returns how many older entries the trim
-- dropped (counted in NS:stats dead_letters_trimmed, so retention never drops silently).
local function add_dead_letter(stream, maxlen, id, user, src, reason, attempts, m)
  local before = redis.call('XLEN', stream)
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'id', id, 'user', user, 'src', src,
             'reason', reason, 'attempts', attempts, 'm', m)
  local dropped = before + 1 - redis.call('XLEN', stream)
  if dropped < 0 then dropped = 0 end
  return dropped
end

-- An assignment's admission record (assign.lua writes "assigned USER RESOURCE" at `id`):
-- its state word becomes `state` ("accepted", "expired", "released"). Nothing when there is
-- no record (no admissions key given, the record's time has passed, an unknown id).
local function admission_state(admissions, id, state)
  if not admissions or not id or id == '' then return end
  local rec = redis.call('HGET', admissions, id)
  if not rec then return end
  local rest = string.match(rec, '^%S+ (.*)$')
  if rest then redis.call('HSET', admissions, id, state .. ' ' .. rest) end
end

-- An admission's record is kept at least a minute past its lease's end (a lease renewed
-- past --admission-ttl keeps its record: renew, the gate and verify go on finding it).
-- admissions_t: zset id -> keep until (ms); lease_end: ms, or nil (nothing to do).
local record_margin_ms = 60000
local function keep_record(admissions_t, id, lease_end)
  if not admissions_t or not id or id == '' or not lease_end then return end
  redis.call('ZADD', admissions_t, 'GT', string.format('%d', lease_end + record_margin_ms), id)
end

-- A fenced write: refuses (an error reply to return) when the queue's fence is above the
-- caller's fencing token, else raises the fence to it. token: the parsed number,
-- token_text: as the caller gave it.
local function fence_refusal(fence, token, token_text)
  local stored = tonumber(redis.call('GET', fence) or '0') or 0
  if stored > token then
    return redis.error_reply('fenced fencing token ' .. token_text .. ' is older than ' ..
                             string.format('%d', stored))
  end
  if token > stored then redis.call('SET', fence, token_text) end
  return nil
end

-- The list from position i to the end (a script's variadic last input: rest(ARGV, 4)).
local function rest(list, i)
  local out = {}
  for j = i, #list do out[#out + 1] = list[j] end
  return out
end

-- A queue's capacity at `now` (docs/capacity.md): the settings hash's rate_per_min, burst,
-- passes, max_active and the rate's clock (clock_start, clock_made, clock_last: the due
-- instants are clock_start + k * 60000 / rate, clock_made of them were used, the last at
-- clock_last). Returns the most assignments allowed now (nil: no limit), whether passes may
-- be made, the clock (nil without a rate) and the live count (nil without a cap).
-- Owed instants are made up at up to twice the pace (a hand-over); assign.lua banks at
-- most max(1, burst) of them whenever it could not use them (capacity_spent).
local function capacity_at(settings, assigned, now)
  local c = redis.call('HMGET', settings, 'rate_per_min', 'burst', 'passes', 'max_active',
                       'clock_start', 'clock_made', 'clock_last')
  local rate = uint(c[1]) or 0
  local cap = uint(c[4]) or 0
  local limit, clock, live = nil, nil, nil
  if rate > 0 then
    local start = uint(c[5]) or now
    local made = uint(c[6]) or 0
    local last = uint(c[7]) or start
    local due = math.floor(math.max(0, now - start) * rate / 60000) + 1
    local pace = math.max(1, math.floor(math.max(0, now - last) * 2 * rate / 60000))
    clock = {start = start, made = made, due = due, fresh = not uint(c[5]),
             bank = math.max(1, uint(c[2]) or 0)}
    clock.allowed = math.max(0, math.min(due - made, pace))
    limit = clock.allowed
  end
  if cap > 0 then
    live = redis.call('HLEN', assigned)
    local room = math.max(0, cap - live)
    if not limit or room < limit then limit = room end
  end
  return limit, rate > 0 and c[3] ~= '0', clock, live
end

-- Writes the rate's clock after `n` assignments at `now`: the instants used, and when the
-- call was `idle` (fewer made than the clock allowed for want of users, stock or room under
-- the cap, or a pause: not for a batch's size) at most clock.bank left owed: a rate is a
-- pace, never a debt that bursts later. `idle` nil: idle when n is 0.
local function capacity_spent(settings, clock, n, now, idle)
  if not clock then return end
  local made = clock.made + n
  if idle == nil then idle = n == 0 end
  if idle then made = math.max(made, clock.due - clock.bank) end
  local f = {}
  if clock.fresh then f[#f + 1], f[#f + 2] = 'clock_start', string.format('%d', clock.start) end
  if made ~= clock.made then
    f[#f + 1], f[#f + 2] = 'clock_made', string.format('%d', made)
  end
  if n > 0 then f[#f + 1], f[#f + 2] = 'clock_last', string.format('%d', now) end
  if #f > 0 then redis.call('HSET', settings, unpack(f)) end
end

-- An admission's lease (settings session_s, session_renewal): the lease's end for an
-- assignment at `now` (nil without a lease) and whether renewals extend it.
local function lease_terms(settings, now)
  local c = redis.call('HMGET', settings, 'session_s', 'session_renewal')
  local s = uint(c[1]) or 0
  if s == 0 then return nil, false, 0 end
  return now + s * 1000, c[2] ~= '0', s * 1000
end

-- A pass (an admission without a stock resource, made by the rate): its resource name.
local function pass_name(n)
  return 'pass:' .. string.format('%d', n)
end

local function is_pass(resource)
  return string.sub(resource, 1, 5) == 'pass:'
end

-- The per-minute report (docs/capacity.md "Report"; `pushonce-leader report`): a hash per
-- queue and minute, <the queue's slot prefix>:report:<minute since the epoch>, kept 7 days,
-- next to the queue's keys (named from `queue_key`, any key of the queue: same slot).
local report_keep_ms = 7 * 86400000 + 60000

local function report_key(queue_key, minute)
  local close = string.find(queue_key, '}', 1, true) or #queue_key
  return string.sub(queue_key, 1, close) .. ':report:' .. string.format('%d', minute)
end

-- Adds n to `field` of the minute of `now`.
local function report_count(queue_key, now, field, n)
  if not n or n == 0 then return end
  local key = report_key(queue_key, math.floor(now / 60000))
  if redis.call('HINCRBY', key, field, n) == n then redis.call('PEXPIRE', key, report_keep_ms) end
end

-- The histogram field of a duration in seconds: "<prefix><b>", b = floor(log2(s + 1)).
local function report_bucket(prefix, seconds)
  local b = math.floor(math.log(math.max(0, seconds) + 1) / math.log(2) + 1e-9)
  return prefix .. string.format('%d', b)
end

-- Counts the ends of admissions in the minute of `now`: `field` (offers_expired,
-- leases_expired, released) and each one's length since its assignment (histogram "l:").
local function report_ends(queue_key, now, field, assignment_ids)
  if #assignment_ids == 0 then return end
  local key = report_key(queue_key, math.floor(now / 60000))
  redis.call('HINCRBY', key, field, #assignment_ids)
  for _, id in ipairs(assignment_ids) do
    local at = math.floor(math.floor((tonumber(id) or 0) / 4096) / 4) + 1767225600000
    if tonumber(id) then redis.call('HINCRBY', key, report_bucket('l:', (now - at) / 1000), 1) end
  end
  redis.call('PEXPIRE', key, report_keep_ms)
end
