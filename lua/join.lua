-- join.lua: add a user at the tail of a queue's waiting list.
-- KEYS[1] NS:{q:Q}:waiting (zset user -> ticket)
-- KEYS[2] NS:{q:Q}:assigned (hash user -> resource)
-- KEYS[3] NS:{q:Q}:ticket (string counter)
-- KEYS[4] NS:{q:Q}:registered (set by every leader that runs the queue)
-- KEYS[5] NS:{q:Q}:events (the queue's event sequence, queue_event in prelude.lua)
-- KEYS[6] NS:{q:Q}:settings (state, opens_at, max_waiting: settings.lua)
-- KEYS[7] NS:{q:Q}:prequeue (zset user -> join order), KEYS[8] NS:{q:Q}:stats (counters),
-- KEYS[9] NS:{q:Q}:prequeue:seq (the pre-queue's join order counter)
-- KEYS[10] NS:{q:Q}:pow:TOKEN (optional: the single use of a proof-of-work solution the
-- gateway verified)
-- ARGV[1] user, ARGV[2] wake channel, ARGV[3] queue name, ARGV[4] ms the single-use mark
-- lives (with KEYS[10])
-- Returns {position (1 = next), ticket, event sequence, 0}: the position is the one after
-- that event. In the pre-queue: {0, 0, 0, opens_at}; a join at or after opens_at (the
-- opening is under way) is ordered after every earlier one, behind the shuffled ones.
-- Errors: not_found (no leader has ever run the queue: nothing is written),
-- already_queued, already_assigned, closed, full (counted in stats refused_closed,
-- refused_full), bad_request (the proof of work was used already: counted in stats
-- refused_pow; a refused join does not use it up).
local waiting = KEYS[1]
local assigned = KEYS[2]
local ticket_counter = KEYS[3]
local registered = KEYS[4]
local events = KEYS[5]
local settings = KEYS[6]
local prequeue = KEYS[7]
local stats = KEYS[8]
local prequeue_seq = KEYS[9]
local pow_used = KEYS[10]
local user = ARGV[1]
local wake = ARGV[2]
local queue = ARGV[3]
local pow_ttl = ARGV[4]
if redis.call('EXISTS', registered) == 0 then
  return redis.error_reply('not_found queue ' .. queue .. ' is not run by any leader')
end
if redis.call('ZSCORE', waiting, user) or redis.call('ZSCORE', prequeue, user) then
  return redis.error_reply('already_queued ' .. user .. ' is already queued')
end
if redis.call('HEXISTS', assigned, user) == 1 then
  return redis.error_reply('already_assigned ' .. user .. ' already holds an assignment')
end
local cfg = redis.call('HMGET', settings, 'state', 'opens_at', 'max_waiting')
if cfg[1] == 'closed' then
  redis.call('HINCRBY', stats, 'refused_closed', 1)
  report_count(waiting, now_ms(), 'refused_closed', 1)
  return redis.error_reply('closed queue ' .. queue .. ' is closed')
end
local cap = tonumber(cfg[3] or '0') or 0
if cap > 0 and redis.call('ZCARD', waiting) + redis.call('ZCARD', prequeue) >= cap then
  redis.call('HINCRBY', stats, 'refused_full', 1)
  report_count(waiting, now_ms(), 'refused_full', 1)
  return redis.error_reply('full queue ' .. queue .. ' is full')
end
if pow_used then
  local ttl = uint(pow_ttl)
  if not ttl or ttl < 1 then
    return redis.error_reply('bad_request the proof of work mark needs a ttl')
  end
  if not redis.call('SET', pow_used, '1', 'NX', 'PX', ttl) then
    redis.call('HINCRBY', stats, 'refused_pow', 1)
    report_count(waiting, now_ms(), 'refused_pow', 1)
    return redis.error_reply('bad_request this proof of work was used already')
  end
end
if cfg[1] == 'prequeue' then
  local opens_at = tonumber(cfg[2] or '0') or 0
  local order = redis.call('INCR', prequeue_seq)
  -- 2^48: after every join before the opening (opening_draw.lua shuffles those only).
  if now_ms() >= opens_at then order = order + 281474976710656 end
  redis.call('ZADD', prequeue, order, user)
  report_count(waiting, now_ms(), 'joins', 1)
  return {0, 0, 0, opens_at}
end
local ticket = redis.call('INCR', ticket_counter)
redis.call('ZADD', waiting, ticket, user)
-- The report: the join counted in its minute; a minute's first ticket is indexed
-- (<slot>:report:tickets, ticket -> minute), so that assign.lua can tell a wait.
local minute = math.floor(now_ms() / 60000)
local report = report_key(waiting, minute)
if redis.call('HINCRBY', report, 'joins', 1) == 1 then
  redis.call('PEXPIRE', report, report_keep_ms)
  local index = string.sub(report, 1, string.find(report, ':report:', 1, true)) .. 'report:tickets'
  redis.call('ZADD', index, ticket, string.format('%d', minute))
  redis.call('ZREMRANGEBYRANK', index, 0, -10082)
end
local position = redis.call('ZRANK', waiting, user) + 1
local seq = queue_event(events, wake, queue, 'j', {ticket})
return {position, ticket, seq, 0}
