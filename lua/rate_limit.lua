-- rate_limit.lua: a token bucket shared by every gateway (the publish API's limit per API
-- key, docs/security.md). One call per HTTP request, whatever the request holds.
-- KEYS[1] NS:ratelimit:<bucket>   hash {tokens, ts}; expires once it would be full again
-- ARGV[1] rate: tokens added per second (positive integer)
-- ARGV[2] burst: the bucket's size (positive integer); a new bucket starts full
-- ARGV[3] cost of this call (positive integer)
-- Returns {1, 0} when the tokens were taken, {0, retry_after_ms} when not (nothing taken).
-- Error: bad_request (an argument that is not a positive integer).
local rate, burst, cost = uint(ARGV[1]), uint(ARGV[2]), uint(ARGV[3])
if not rate or rate == 0 or not burst or burst == 0 or not cost or cost == 0 then
  return redis.error_reply('bad_request rate, burst and cost must be positive integers')
end
local now = now_ms()
local m = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
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
redis.call('HSET', KEYS[1], 'tokens', string.format('%.3f', tokens), 'ts', string.format('%d', ts))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {taken, wait}
