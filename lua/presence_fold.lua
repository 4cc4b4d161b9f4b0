-- presence_fold.lua: the gateway instance `instance` is dead (its heartbeat lapsed): up to
-- ARGV[3] of its users' sessions are counted closed, as presence_close.lua would have.
-- Called again with the returned cursor until it answers done.
-- KEYS[1] NS:{presence}:count, KEYS[2] NS:{presence}:gw:INSTANCE,
-- KEYS[3] NS:{presence}:gws, KEYS[4] NS:{presence}:absent
-- ARGV[1] instance, ARGV[2] HSCAN cursor ("0" at first), ARGV[3] batch (1..10000)
-- Every call first deletes the instance's "~live" field (set only by the live gateway
-- itself, presence_reclaim.lua): a gateway that finds it gone knows it was folded, even when
-- a new session's presence_open.lua put the instance back in gws or the fold was cut off
-- half-way ("~" is no user name).
-- Returns {next cursor, users folded, done (1 when the instance is gone)}.
local count = KEYS[1]
local gateway = KEYS[2]
local gateways = KEYS[3]
local absent = KEYS[4]
local instance = ARGV[1]
local cursor = ARGV[2]
local batch_arg = ARGV[3]
local batch = uint(batch_arg)
if not batch or batch < 1 or batch > 10000 then
  return redis.error_reply('bad_request batch must be an integer 1..10000')
end
redis.call('HDEL', gateway, '~live')
local page = redis.call('HSCAN', gateway, cursor, 'COUNT', batch)
local fields = page[2]
local now = now_ms()
local folded = 0
for i = 1, #fields, 2 do
  local user, n = fields[i], tonumber(fields[i + 1]) or 0
  redis.call('HDEL', gateway, user)
  if n > 0 and user ~= '~live' then
    folded = folded + 1
    local open = redis.call('HINCRBY', count, user, -n)
    if open <= 0 then
      redis.call('HDEL', count, user)
      redis.call('ZADD', absent, now, user)
    end
  end
end
local done = 0
if page[1] == '0' and redis.call('EXISTS', gateway) == 0 then
  redis.call('ZREM', gateways, instance)
  done = 1
end
return {page[1], folded, done}
