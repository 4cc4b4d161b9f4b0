-- next_due.lua: when the queue's rate next allows an assignment (read only): the leader
-- sleeps until then instead of polling, so a pass goes out at its due instant.
-- KEYS[1] settings, KEYS[2] waiting, KEYS[3] assigned
-- Returns ms from now (0: allowed now), or -1: nothing to wait for (no rate, nobody
-- waiting, paused, or only a freed resource or place under the cap can help: those wake
-- the leader themselves).
local settings = KEYS[1]
local waiting = KEYS[2]
local assigned = KEYS[3]
local now = now_ms()
-- One read answers the common case, a queue without a rate (called after every wake).
local cfg = redis.call('HMGET', settings, 'paused', 'rate_per_min')
if cfg[1] == '1' or (uint(cfg[2]) or 0) == 0 then return -1 end
if redis.call('ZCARD', waiting) == 0 then return -1 end
local limit, passes, clock = capacity_at(settings, assigned, now)
if not clock then return -1 end
if limit and limit > 0 then
  if passes then return 0 end
  return -1
end
if clock.allowed > 0 then return -1 end  -- at the cap
local rate = uint(redis.call('HGET', settings, 'rate_per_min'))
local at = clock.start + math.ceil(clock.made * 60000 / rate)
return math.max(0, at - now)
