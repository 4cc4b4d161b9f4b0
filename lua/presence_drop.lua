-- presence_drop.lua: forgets up to ARGV[2] absent users whose absence began before
-- ARGV[1] (ms): every queue has already dealt with them (the leader's abandonment sweep).
-- A user who came back and left again since has a newer score and stays.
-- KEYS[1] NS:{presence}:absent
-- ARGV[1] horizon ms (exclusive), ARGV[2] the most to drop (1..10000)
-- Returns how many were dropped.
local absent = KEYS[1]
local horizon_arg = ARGV[1]
local max_arg = ARGV[2]
local horizon = uint(horizon_arg)
local max = uint(max_arg)
if not horizon or not max or max < 1 or max > 10000 then
  return redis.error_reply('bad_request horizon and batch must be integers')
end
local n = redis.call('ZCOUNT', absent, '-inf', '(' .. horizon_arg)
if n == 0 then return 0 end
if n > max then n = max end
return redis.call('ZREMRANGEBYRANK', absent, 0, n - 1)
