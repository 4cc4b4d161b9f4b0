-- claim.lua: the one arbiter of who delivers a message: for each message of a batch, in one
-- atomic step, check its claim record and, when nobody has delivered it and no live lease
-- holds it, deliver it: append the frame to the user's inbox with the next offset, publish
-- it on the user's channel and record the claim as delivered for the dedup window.
-- Nothing can happen between the claim and the delivery, so a winner never dies holding a
-- claim it has not delivered; a loser's claim costs one field of an HMGET.
--
-- KEYS[i] NS:{bus:N}:u:U:c:<id> names message i to user U (N: U's bus shard, the hash tag
--   may be bus:N:K). It is not a key that is written: the user's NS:{bus:N}:u:U:meta
--   (epoch, offset), NS:{bus:N}:u:U:inbox and channel NS:{bus:N}:u:U:ch, and the record
--   bucket NS:{bus:N}:c:..., are named from it (same hash tag, same slot). On Redis Cluster
--   every key of one call is in one slot: a shard's whole batch is one call.
-- ARGV[1] owner token, ARGV[2] lease ms, ARGV[3] dedup window ms, ARGV[4] max attempts,
-- ARGV[5] inbox maxlen, ARGV[6] inbox idle ttl ms, ARGV[7] new epoch (used when a user has
-- none), ARGV[8] the oldest publish time (ms, the "ts" of the tails; 0 = unknown) in the
-- batch, ARGV[9] publish mode: 'p' PUBLISH the frame on the user's channel (a single
-- Redis), 's' SPUBLISH it (Redis Cluster: sharded Pub/Sub, the channel is in the user's
-- slot), 'n' do not publish (the caller does); then for message i: ARGV[8+2i] its record's
-- field "<id>.<digest>" (core/lua/claim.cpp record_field: the digest binds the record to
-- the user and the frame; a bare decimal id is taken too), ARGV[9+2i] frame tail. The frame
-- is {"type":"message","id":"<id>","offset":<offset> .. tail. An empty tail takes a lease
-- without delivering (the caller then dead-letters the message).
--
-- Bound records: a record is found only by the message it was written for (its field
-- names the id, the user and the frame). A message that reuses an id after a failover
-- rolled back its queue's sequence is a new message, not answered "done" by the record of
-- another user's message. A record written under the bare id (by a worker before bound
-- records) is read when the bound field has none: it is the same message's during an
-- upgrade, within one dedup window.
--
-- Record buckets: the records of the ids of one source whose sequence numbers share
-- seq div 128, to users of one shard, are fields of one hash,
-- NS:{bus:N}:c:<source>:<id div 524288> (id = seq * 4096 + source; core/keys.cpp
-- claim_bucket names the same key), kept one dedup window after its last write: one HMGET
-- per bucket to read a batch, one HSET and one PEXPIRE per bucket to write it, instead of a
-- key with its own TTL per message. A record lives at least the window (longer while its
-- bucket fills).
--
-- The claim record is a string (its grammar: prelude.lua, delivered_record ... read_record):
-- delivered, leased, released or dead-lettered. In mode 'n' a delivery is recorded as
-- delivered-not-published until the caller's published.lua call: a caller that fails or
-- dies before it leaves a record any later claim (the sweeper's re-drive) finishes.
-- A message with no claim record that was published longer than (window - lease) ago is
-- not delivered: its record may have expired after an earlier delivery (a worker paused
-- past the window), so delivering could repeat it. It is answered "expired".
-- Returns a flat array, two items per message:
--   "delivered", offset | "done", offset (delivered earlier) | "taken", 0 (live lease) |
--   "unpublished", offset (mode 'n': delivered earlier, its frame not published yet: the
--   caller publishes it; in modes 'p' and 's' this call publishes it and answers "done") |
--   "dead", 0 | "won", attempts (lease taken, nothing delivered: empty tail or attempts over
--   the maximum) | "failed", "<error>" (the inbox write failed; lease kept for a retry) |
--   "expired", 0 (no record and older than the window allows; nothing written).
-- Error: bad_request (bad number, empty owner or epoch, bad publish mode, odd argument
-- count, an id that is not decimal, a key without a hash tag).
local owner = ARGV[1]
local lease_arg = ARGV[2]
local window_s = ARGV[3]
local max_attempts_arg = ARGV[4]
local maxlen_s = ARGV[5]
local idle_s = ARGV[6]
local epoch = ARGV[7]
local oldest_arg = ARGV[8]
local mode = ARGV[9]
-- The numbers that go back into redis.call stay the caller's strings: a Lua number passed
-- to redis.call is formatted with sprintf("%.17g") on every call (4 per delivery: ~4 % of
-- Redis's CPU at 6500 msgs/s, perf).
local lease = uint(lease_arg)
local window = uint(window_s)
local max_attempts = uint(max_attempts_arg)
local maxlen = uint(maxlen_s)
local idle = uint(idle_s)
local oldest = uint(oldest_arg)
local renew_below = idle and idle - math.floor(idle / 8)
if owner == nil or owner == '' or epoch == nil or epoch == '' then
  return redis.error_reply('bad_request owner token and epoch must not be empty')
end
if not lease or lease == 0 or not window or window == 0 or not max_attempts or not maxlen
    or not idle or idle == 0 or not oldest then
  return redis.error_reply(
    'bad_request lease, window, attempts, maxlen, idle, oldest must be integers')
end
if mode ~= 'p' and mode ~= 's' and mode ~= 'n' then
  return redis.error_reply('bad_request publish mode must be p, s or n')
end
if #ARGV ~= 9 + 2 * #KEYS then
  return redis.error_reply('bad_request expected an id and a tail per key')
end

local now
local function clock()
  if not now then now = now_ms() end
  return now
end

local function lease_for(attempts)
  return lease_record(owner, clock() + lease, attempts)
end

-- Record writes are gathered per bucket and written at the end (one HSET and one PEXPIRE
-- per bucket).
local bucket_of, pending, buckets = {}, {}, {}
local function put(i, value)
  local b = bucket_of[i]
  local p = pending[b]
  if not p then
    p = {}
    pending[b] = p
  end
  p[#p + 1] = ARGV[8 + 2 * i]
  p[#p + 1] = value
end

local function deliver(i, ck, id, tail, attempts)
  local prefix = string.sub(ck, 1, #ck - #id - 2)  -- strips 'c:' .. id
  local meta, inbox = prefix .. 'meta', prefix .. 'inbox'
  local offset = redis.call('HINCRBY', meta, 'offset', 1)
  if offset == 1 and redis.call('HSETNX', meta, 'epoch', epoch) == 1 then
    -- A new epoch: an inbox left from an earlier epoch (its offsets restart) is stale.
    redis.call('DEL', inbox)
  end
  local off = string.format('%d', offset)
  local frame = '{"type":"message","id":"' .. id .. '","offset":' .. off .. tail
  local added = redis.pcall('XADD', inbox, 'MAXLEN', '~', maxlen_s, off .. '-0', 'f', frame)
  if type(added) == 'table' and added.err then
    redis.call('HINCRBY', meta, 'offset', -1)  -- offsets stay gap-free
    redis.call('PEXPIRE', meta, idle_s)        -- always both (see below)
    redis.call('PEXPIRE', inbox, idle_s)
    put(i, lease_for(attempts))
    return 'failed', added.err
  end
  if mode == 'p' then
    redis.call('PUBLISH', prefix .. 'ch', frame)
  elseif mode == 's' then
    redis.call('SPUBLISH', prefix .. 'ch', frame)
  end
  if mode == 'n' then
    put(i, unpublished_record(off, attempts))  -- the caller publishes, then published.lua
  else
    put(i, delivered_record(off, attempts))
  end
  -- The idle TTL is renewed when less than 7/8 of it is left (or none: -1, -2), and always
  -- at offset 1 (the inbox may be new): one PTTL per delivery instead of two PEXPIREs. Meta
  -- and inbox are renewed together (here and by the gateways), so the meta's TTL speaks for
  -- both; a user's keys expire between 7/8 of the idle TTL and all of it after the last use.
  if offset == 1 or redis.call('PTTL', meta) < renew_below then
    redis.call('PEXPIRE', meta, idle_s)
    redis.call('PEXPIRE', inbox, idle_s)
  end
  return 'delivered', offset
end

-- Only a batch holding a message older than (window - lease) looks at each message's age.
local stale_before = 0
if oldest > 0 and clock() - oldest > window - lease then stale_before = clock() - (window - lease) end
local function stale(tail)
  if stale_before == 0 then return false end
  local ts = tonumber(string.match(tail, '"ts":(%d+)}$'))
  return ts ~= nil and ts < stale_before
end

-- One HMGET per bucket reads every claim record of the batch: a loser's claim costs one
-- field of it.
-- ids[i]: message i's id, the digits its record's field starts with.
local records, fields, ids = {}, {}, {}
for i = 1, #KEYS do
  local ck, id = KEYS[i], string.match(ARGV[8 + 2 * i], '^(%d+)%.?%x*$')
  if not id then return redis.error_reply('bad_request ids must be decimal') end
  ids[i] = id
  local b = record_bucket(ck, id)
  if not b then return redis.error_reply('bad_request a claim key has a hash tag') end
  bucket_of[i] = b
  local f = fields[b]
  if not f then
    f = {}
    fields[b] = f
    buckets[#buckets + 1] = b
  end
  f[#f + 1] = i
end
-- One HMGET per bucket: the bound fields, then the bare ids of the bound ones (records
-- from before bound records), whose value counts only where the bound field has none.
for _, b in ipairs(buckets) do
  local names, bare = {}, {}
  for j, i in ipairs(fields[b]) do
    names[j] = ARGV[8 + 2 * i]
    if ids[i] ~= names[j] then bare[#bare + 1] = i end
  end
  local n = #names
  for k, i in ipairs(bare) do names[n + k] = ids[i] end
  local vs = redis.call('HMGET', b, unpack(names))
  for j, i in ipairs(fields[b]) do records[i] = vs[j] end
  for k, i in ipairs(bare) do
    if not records[i] then records[i] = vs[n + k] end
  end
end
local out = {}
local function claim_each()
  for i = 1, #KEYS do
    local ck, id, tail = KEYS[i], ids[i], ARGV[9 + 2 * i]
    local state, value
    local v = records[i]
    local attempts = 1
    local kind, n, a, unpublished = read_record(v)
    if kind == 'delivered' and unpublished then
      -- Delivered by a caller that did not publish its frame (it failed or died after the
      -- claim): publish it now (sessions drop an offset they have sent), or hand it back.
      if mode == 'n' then
        state, value = 'unpublished', n
      else
        local prefix = string.sub(ck, 1, #ck - #id - 2)
        local off = string.format('%d', n)
        local frame = '{"type":"message","id":"' .. id .. '","offset":' .. off .. tail
        redis.call(mode == 's' and 'SPUBLISH' or 'PUBLISH', prefix .. 'ch', frame)
        put(i, delivered_record(off, a))
        state, value = 'done', n
      end
    elseif kind == 'delivered' then
      state, value = 'done', n
    elseif kind == 'leased' then
      if n > clock() then state, value = 'taken', 0 end
      attempts = a + 1
    elseif kind == 'released' then
      attempts = a + 1
    elseif kind == 'dead' then
      state, value = 'dead', 0
    end
    if not v and stale(tail) then state, value = 'expired', 0 end
    if not state then
      if tail == '' or attempts > max_attempts then
        put(i, lease_for(attempts))
        state, value = 'won', attempts
      else
        state, value = deliver(i, ck, id, tail, attempts)
      end
    end
    out[2 * i - 1], out[2 * i] = state, value
  end
end
-- The gathered records are written even when a call fails half-way (a corrupted key of a
-- user): what was delivered before it stays recorded.
local ok, err = pcall(claim_each)
for _, b in ipairs(buckets) do
  local p = pending[b]
  if p then
    redis.call('HSET', b, unpack(p))
    redis.call('PEXPIRE', b, window_s)
  end
end
if not ok then
  return redis.error_reply(type(err) == 'table' and err.err or tostring(err))
end
return out
