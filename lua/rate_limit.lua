-- rate_limit.lua: a token bucket shared by every gateway (the publish API's limit per API
-- key, docs/security.md; the bucket is prelude.lua's take_tokens). One call per HTTP
-- request, whatever the request holds, where publish.lua cannot take the tokens itself
-- (Redis Cluster, or a request over several bus shards).
-- Returns {1, 0} when the tokens were taken, {0, retry_after_ms} when not (nothing taken).
-- Error: bad_request (an argument that is not a positive integer).
local bucket = KEYS[1]  -- NS:ratelimit:<bucket>: hash {tokens, ts}; expires once full again
local rate = ARGV[1]    -- tokens added per second (positive integer)
local burst = ARGV[2]   -- the bucket's size (positive integer); a new bucket starts full
local cost = ARGV[3]    -- cost of this call (positive integer)
rate, burst, cost = uint(rate), uint(burst), uint(cost)
if not rate or rate == 0 or not burst or burst == 0 or not cost or cost == 0 then
  return redis.error_reply('bad_request rate, burst and cost must be positive integers')
end
local taken, wait = take_tokens(bucket, rate, burst, cost)
return {taken, wait}
