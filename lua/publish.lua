-- publish.lua: custom messages to users of one bus shard. Each message gets the shard's
-- next id; the batch is ONE outbox entry and ONE bus message, one line per message, so
-- workers claim it with one call and the sweeper reads it back whole.
-- KEYS[1] NS:{bus:N}:seq, KEYS[2] NS:{bus:N}:outbox, then, on a single Redis only (other
-- slots): NS:stats when ARGV[8] is "1", and the API key's rate bucket NS:ratelimit:api:<h>
-- when ARGV[6] is not "0"; then NS:{bus:N}:idem:<user>:<key>, one per message that has an
-- idempotency key, in message order.
-- ARGV[1] shard N (0..4095), ARGV[2] dedup window ms, ARGV[3] outbox retention ms (entries
-- older than this are trimmed, XADD MINID), ARGV[4] bus channel, ARGV[5] publish mode:
-- 'p' PUBLISH on it (a single Redis: NS:bus), 's' SPUBLISH (Redis Cluster: the shard's
-- own NS:{bus:N}:ch, in this script's slot), ARGV[6] the request's rate limit in requests
-- per second ("0": none), ARGV[7] its burst, ARGV[8] "1": add the published count to
-- NS:stats `published`; then for message i: ARGV[6+3i] user, ARGV[7+3i] data JSON
-- (validated by the caller; spliced verbatim), ARGV[8+3i] "1" when it has an idempotency
-- key (the next unused KEYS entry), else "0".
-- The rate check takes one token for the whole call (one HTTP request) before anything is
-- written; without one, the error rate_limited <ms until a token> and nothing published.
-- A message line is {"id":"ID","user":"U","src":"bus:N","kind":"message","data":D,"ts":T}:
-- the frame tail a worker needs is its suffix from ,"kind".
-- Returns a flat array, two items per message: id, duplicate (1 when its idempotency key
-- was seen inside the window: the first message's id, nothing published). A key repeated
-- inside one batch is a duplicate of its first use.
-- Error: bad_request (bad number, bad user, empty data, bad publish mode, argument count),
-- rate_limited.
local seq_key = KEYS[1]
local outbox = KEYS[2]
local source_arg = ARGV[1]
local window_arg = ARGV[2]
local retention_arg = ARGV[3]
local channel = ARGV[4]
local mode = ARGV[5]
local rate_arg = ARGV[6]
local burst_arg = ARGV[7]
local count_arg = ARGV[8]
local source = uint(source_arg)
local window = uint(window_arg)
local retention = uint(retention_arg)
local rate = uint(rate_arg)
local burst = uint(burst_arg)
local count = count_arg == '1'
if not source or source > 4095 then
  return redis.error_reply('bad_request source must be an integer 0..4095')
end
if not window or window == 0 or not retention or retention == 0 then
  return redis.error_reply('bad_request dedup window and retention must be positive integers')
end
if mode ~= 'p' and mode ~= 's' then
  return redis.error_reply('bad_request publish mode must be p or s')
end
if not rate or (rate > 0 and (not burst or burst == 0)) then
  return redis.error_reply('bad_request rate and burst must be integers, burst positive')
end
local n = (#ARGV - 8) / 3
if n < 1 or n ~= math.floor(n) or not channel then
  return redis.error_reply('bad_request expected user, data, has-key per message')
end

local now = now_ms()
local tail = ',"ts":' .. string.format('%d', now) .. '}'
local head = '","src":"bus:' .. source .. '","kind":"message","data":'
local minid = string.format('%d', now - retention)

for i = 1, n do
  local user, data = ARGV[6 + 3 * i], ARGV[7 + 3 * i]
  if not string.match(user, '^[%w%._@%-]+$') or data == '' then
    return redis.error_reply('bad_request message ' .. i .. ': bad user or empty data')
  end
end

local next_key, stats = 3, nil
if count then stats, next_key = KEYS[next_key], next_key + 1 end
if rate > 0 then
  local taken, wait = take_tokens(KEYS[next_key], rate, burst, 1)
  if taken == 0 then return redis.error_reply('rate_limited ' .. wait) end
  next_key = next_key + 1
end

-- Reads first, writes after: the idempotency keys are set only once the outbox entry is
-- written, so an XADD that fails (e.g. the outbox key holds another type) leaves no key
-- naming an id that was never published (only the sequence has moved on: ids skip).
local out, lines, seq, pending, fresh = {}, {}, nil, {}, {}
for i = 1, n do
  local user, data, has_key = ARGV[6 + 3 * i], ARGV[7 + 3 * i], ARGV[8 + 3 * i] == '1'
  local key, first
  if has_key then
    key, next_key = KEYS[next_key], next_key + 1
    first = fresh[key] or redis.call('GET', key)
  end
  if first then
    out[2 * i - 1], out[2 * i] = first, 1
  else
    -- Ids are taken in one INCRBY for the batch: the first fresh message reserves the rest.
    if not seq then seq = redis.call('INCRBY', seq_key, n - i + 1) - (n - i + 1) end
    seq = seq + 1
    local id = string.format('%d', seq * 4096 + source)
    lines[#lines + 1] = '{"id":"' .. id .. '","user":"' .. user .. head .. data .. tail
    if key then
      fresh[key] = id
      pending[#pending + 1] = key
    end
    out[2 * i - 1], out[2 * i] = id, 0
  end
end
if #lines > 0 then
  local payload = table.concat(lines, '\n')
  redis.call('XADD', outbox, 'MINID', '~', minid, '*', 'm', payload)
  for _, key in ipairs(pending) do redis.call('SET', key, fresh[key], 'PX', window) end
  redis.call(mode == 's' and 'SPUBLISH' or 'PUBLISH', channel, payload)
  if stats then redis.call('HINCRBY', stats, 'published', #lines) end
end
return out
