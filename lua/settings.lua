-- settings.lua: read or change a queue's run-time settings (the hash NS:{q:Q}:settings,
-- docs/data-model.md), atomically, and answer all of them.
-- KEYS[1] NS:{q:Q}:settings, KEYS[2] NS:{q:Q}:registered, KEYS[3] NS:{q:Q}:prequeue
-- ARGV[1] queue name, ARGV[2] wake channel, ARGV[3] what: get | set | pause | resume |
-- close | open, ARGV[4] open: when (ms since the epoch; "" = now), ARGV[5] open: shuffle
-- ("1" or "0"), ARGV[6..] set: field, value, field, value...
-- Returns {registered value, pre-queue length, field, value, field, value...}, then the
-- number of live admissions (HLEN of KEYS[4], when given) as field "active".
-- A change publishes the queue's name on the wake channel (the leader looks at the queue:
-- a resume assigns, an opening starts).
-- Errors: not_found (no leader has ever run the queue), bad_request.
local settings = KEYS[1]
local registered = KEYS[2]
local prequeue = KEYS[3]
local assigned = KEYS[4]
local queue = ARGV[1]
local wake = ARGV[2]
local what = ARGV[3]
local at = ARGV[4]
local shuffle = ARGV[5]

local registration = redis.call('GET', registered)
if not registration then
  return redis.error_reply('not_found queue ' .. queue .. ' is not run by any leader')
end

local fields = {max_waiting = true, abandon_after_s = true, accept_timeout_s = true,
                join_pow_bits = true, rate_per_min = true, burst = true, passes = true,
                max_active = true, session_s = true, session_renewal = true}
if what == 'set' then
  for i = 6, #ARGV, 2 do
    if not fields[ARGV[i]] or not uint(ARGV[i + 1]) then
      return redis.error_reply('bad_request cannot set ' .. tostring(ARGV[i]) .. ' to ' ..
                               tostring(ARGV[i + 1]))
    end
  end
  for i = 6, #ARGV, 2 do
    -- A new rate restarts its clock from the change (prelude.lua capacity_at).
    if ARGV[i] == 'rate_per_min' and redis.call('HGET', settings, ARGV[i]) ~= ARGV[i + 1] then
      redis.call('HDEL', settings, 'clock_start', 'clock_made', 'clock_last')
    end
    redis.call('HSET', settings, ARGV[i], ARGV[i + 1])
  end
elseif what == 'pause' then
  redis.call('HSET', settings, 'paused', '1')
elseif what == 'resume' then
  redis.call('HDEL', settings, 'paused')
elseif what == 'close' then
  redis.call('HSET', settings, 'state', 'closed')
  redis.call('HDEL', settings, 'opens_at')
elseif what == 'open' then
  local now = now_ms()
  local when = uint(at)
  if at ~= '' and (not when or when <= now) then
    return redis.error_reply('bad_request the opening time must be in the future')
  end
  -- A pre-queue left over (from a close during the pre-queue) opens now.
  if not when and redis.call('ZCARD', prequeue) > 0 then when = now end
  if shuffle == '1' then
    redis.call('HSET', settings, 'shuffle', '1')
  else
    redis.call('HDEL', settings, 'shuffle')
  end
  if when then
    redis.call('HSET', settings, 'state', 'prequeue', 'opens_at', string.format('%d', when))
  else
    redis.call('HSET', settings, 'state', 'open')
    redis.call('HDEL', settings, 'opens_at')
  end
elseif what ~= 'get' then
  return redis.error_reply('bad_request unknown settings change ' .. tostring(what))
end
if what ~= 'get' then redis.call('PUBLISH', wake, queue) end

local out = {registration, redis.call('ZCARD', prequeue)}
local names = {'state', 'paused', 'opens_at', 'shuffle', 'max_waiting', 'abandon_after_s',
               'accept_timeout_s', 'join_pow_bits', 'rate_per_min', 'burst', 'passes',
               'max_active', 'session_s', 'session_renewal'}
local values = redis.call('HMGET', settings, unpack(names))
for i = 1, #names do
  if values[i] then
    out[#out + 1] = names[i]
    out[#out + 1] = values[i]
  end
end
if assigned then
  out[#out + 1] = 'active'
  out[#out + 1] = string.format('%d', redis.call('HLEN', assigned))
end
return out
