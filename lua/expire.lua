-- expire.lua: ends one assignment whose accept deadline has passed: the resource is free
-- again (and goes to the next user), the user gets an `expired` message through the
-- outbox and the bus. One per call; nil when none is due.
-- KEYS[1] pending, KEYS[2] pending:ids, KEYS[3] assigned, KEYS[4] res:free, KEYS[5] res:seq,
-- KEYS[6] res:holder, KEYS[7] seq, KEYS[8] outbox, KEYS[9] fence
-- ARGV[1] queue, ARGV[2] source, ARGV[3] fencing token ("0" = none), ARGV[4] outbox retention ms,
-- ARGV[5] bus channel, ARGV[6] wake channel
-- Returns {expired message id, user, resource, assignment id}. Error: fenced.
local queue, source, token = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if not source or not token then return redis.error_reply('bad_request source and token must be numbers') end
if token ~= 0 then
  local stored = tonumber(redis.call('GET', KEYS[9]) or '0') or 0
  if stored > token then return redis.error_reply('fenced a newer leader acts on this queue') end
end

local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
if #due == 0 then return nil end
local user = due[1]
local assignment = redis.call('HGET', KEYS[2], user) or ''
local resource = redis.call('HGET', KEYS[3], user)
redis.call('ZREM', KEYS[1], user)
redis.call('HDEL', KEYS[2], user)
if not resource then return nil end
redis.call('HDEL', KEYS[3], user)
if redis.call('HGET', KEYS[6], resource) == user then
  redis.call('HDEL', KEYS[6], resource)
  redis.call('ZADD', KEYS[4], redis.call('INCR', KEYS[5]), resource)
end

local seq = redis.call('INCR', KEYS[7])
local id = string.format('%d', seq * 4096 + source)
local msg = '{"id":"' .. id .. '","user":' .. cjson.encode(user) ..
  ',"src":' .. cjson.encode('q:' .. queue) ..
  ',"kind":"expired","data":{"id":' .. cjson.encode(assignment) .. ',"queue":' ..
  cjson.encode(queue) .. ',"resource":' .. cjson.encode(resource) .. '},"ts":' ..
  string.format('%d', now) .. '}'
local minid = string.format('%d', now - (tonumber(ARGV[4]) or 0))
redis.call('XADD', KEYS[8], 'MINID', '~', minid, '*', 'm', msg)
redis.call('PUBLISH', ARGV[5], msg)
redis.call('PUBLISH', ARGV[6], queue)
return {id, user, resource, assignment}
