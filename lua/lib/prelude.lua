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
