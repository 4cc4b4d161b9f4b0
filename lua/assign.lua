-- assign.lua: one assignment: the first waiting user (lowest ticket) gets the first free
-- resource (lowest score); the message is written to the queue's outbox and published on
-- the bus.
-- KEYS[1] waiting, KEYS[2] assigned, KEYS[3] res:meta, KEYS[4] res:free,
-- KEYS[5] res:holder, KEYS[6] seq, KEYS[7] outbox, KEYS[8] fence,
-- KEYS[9] pending (zset user -> accept_by; only with an accept timeout),
-- KEYS[10] pending:ids (hash user -> assignment id, what `accept` checks)
-- ARGV[1] queue name, ARGV[2] source index, ARGV[3] fencing token ("0" = none),
-- ARGV[4] accept timeout ms ("0" = none), ARGV[5] outbox retention ms
-- (older entries are trimmed, XADD MINID), ARGV[6] bus channel,
-- ARGV[7] wake channel (optional: told the queue's name, so gateways update positions)
-- Returns nil when nobody waits or nothing is free, else {id, user, resource}.
-- Errors: fenced (a newer leader has acted on this queue), bad_request (bad number).
local queue = ARGV[1]
local source = uint(ARGV[2])
local token = uint(ARGV[3])
local timeout = uint(ARGV[4])
local retention = uint(ARGV[5])
if not source or source > 4095 then
  return redis.error_reply('bad_request source must be an integer 0..4095')
end
if not token or not timeout or not retention then
  return redis.error_reply('bad_request fencing token, accept timeout and retention must be integers')
end

if token ~= 0 then
  local stored = tonumber(redis.call('GET', KEYS[8]) or '0') or 0
  if stored > token then
    return redis.error_reply('fenced fencing token ' .. ARGV[3] .. ' is older than ' ..
                             string.format('%d', stored))
  end
  if token > stored then
    redis.call('SET', KEYS[8], ARGV[3])
  end
end

-- The head of each list. Stale heads (a waiting user who already holds an assignment, a
-- free resource that is unknown or held) cannot arise through the other scripts; they are
-- dropped, a bounded number per call.
local user, resource
for _ = 1, 8 do
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #head == 0 then return nil end
  if redis.call('HEXISTS', KEYS[2], head[1]) == 0 then
    user = head[1]
    break
  end
  redis.call('ZREM', KEYS[1], head[1])
end
if not user then return nil end
for _ = 1, 8 do
  local head = redis.call('ZRANGE', KEYS[4], 0, 0)
  if #head == 0 then return nil end
  if redis.call('HEXISTS', KEYS[3], head[1]) == 1 and
     redis.call('HEXISTS', KEYS[5], head[1]) == 0 then
    resource = head[1]
    break
  end
  redis.call('ZREM', KEYS[4], head[1])
end
if not resource then return nil end

local now = now_ms()

redis.call('ZREM', KEYS[1], user)
redis.call('ZREM', KEYS[4], resource)
redis.call('HSET', KEYS[2], user, resource)
redis.call('HSET', KEYS[5], resource, user)

local seq = redis.call('INCR', KEYS[6])
local id = string.format('%d', seq * 4096 + source)
local meta = redis.call('HGET', KEYS[3], resource) or 'null'
if meta == '' then meta = 'null' end
local accept_by = 'null'
if timeout > 0 then accept_by = string.format('%d', now + timeout) end

-- The bus message layout of publish.lua: the frame tail is the suffix from ,"kind".
local msg = '{"id":"' .. id .. '","user":' .. cjson.encode(user) ..
  ',"src":' .. cjson.encode('q:' .. queue) ..
  ',"kind":"assignment","data":{"queue":' .. cjson.encode(queue) ..
  ',"resource":' .. cjson.encode(resource) .. ',"meta":' .. meta ..
  ',"accept_by":' .. accept_by .. '},"ts":' .. string.format('%d', now) .. '}'

redis.call('XADD', KEYS[7], 'MINID', '~', string.format('%d', now - retention), '*', 'm', msg)
redis.call('PUBLISH', ARGV[6], msg)
if ARGV[7] then redis.call('PUBLISH', ARGV[7], queue) end
if KEYS[10] then
  redis.call('HSET', KEYS[10], user, id)
  if timeout > 0 then redis.call('ZADD', KEYS[9], now + timeout, user) end
end
return {id, user, resource}
