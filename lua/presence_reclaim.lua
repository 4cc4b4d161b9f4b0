-- presence_reclaim.lua: a live gateway instance finds itself folded (the leader counted its
-- sessions closed while its heartbeat had lapsed: a pause, a slow link) and counts its
-- sessions again: each user's sessions on this instance become `n` (never fewer than
-- already counted), the difference added to the user's count, the user out of `absent`.
-- KEYS[1] NS:{presence}:count, KEYS[2] NS:{presence}:gw:INSTANCE,
-- KEYS[3] NS:{presence}:gws, KEYS[4] NS:{presence}:absent
-- ARGV[1] instance, then pairs: user, sessions (at most 1000 pairs)
-- Sets the instance's "~live" field (presence_fold.lua deletes it): the gateway calls this
-- script, with no pairs, at its first check too, and again whenever it finds the field gone.
-- Returns how many users were counted again.
local count = KEYS[1]
local gateway = KEYS[2]
local gateways = KEYS[3]
local absent = KEYS[4]
local instance = ARGV[1]
if (#ARGV - 1) % 2 ~= 0 or (#ARGV - 1) / 2 > 1000 then
  return redis.error_reply('bad_request pairs of user and sessions, at most 1000')
end
local restored = 0
for i = 2, #ARGV, 2 do
  local user, n = ARGV[i], uint(ARGV[i + 1])
  if not n then return redis.error_reply('bad_request sessions must be an integer') end
  local here = tonumber(redis.call('HGET', gateway, user) or '0')
  if n > here then
    redis.call('HINCRBY', gateway, user, n - here)
    if redis.call('HINCRBY', count, user, n - here) == n - here then
      redis.call('ZREM', absent, user)
    end
    restored = restored + 1
  end
end
redis.call('HSET', gateway, '~live', '0')
redis.call('ZADD', gateways, 'NX', now_ms(), instance)
return restored
