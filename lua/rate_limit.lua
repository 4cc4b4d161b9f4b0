-- rate_limit.lua: a token bucket shared by every gateway (the publish API's limit per API
-- key, docs/security.md; the bucket is prelude.lua's take_tokens). One call per HTTP
-- request, whatever the request holds, where publish.lua cannot take the tokens itself
-- (Redis Cluster, or a request over several bus shards).
-- KEYS[1] NS:ratelimit:<bucket>   hash {tokens, ts}; expires once it would be full again
-- ARGV[1] rate: tokens added per second (positive integer)
-- ARGV[2] burst: the bucket's size (positive integer); a new bucket starts full
-- ARGV[3] cost of this call (positive integer)
-- Returns {1, 0} when the tokens were taken, {0, retry_after_ms} when not (nothing taken).
-- Error: bad_request (an argument that is not a positive integer).
local bucket = KEYS[1]
local rate_arg = ARGV[1]
local burst_arg = ARGV[2]
local cost_arg = ARGV[3]
local rate = uint(rate_arg)
local burst = uint(burst_arg)
local cost = uint(cost_arg)
if not rate or rate == 0 or not burst or burst == 0 or not cost or cost == 0 then
  return redis.error_reply('bad_request rate, burst and cost must be positive integers')
end
local taken, wait = take_tokens(bucket, rate, burst, cost)
return {taken, wait}
