-- resource_release.lua: the holder of a resource is done (`resource release`), or an
-- admission is released by its id (`admission release`, POST /api/admission/ID/release, a
-- revoke): the same act. The resource becomes free again (at the tail of the free order; a
-- pass is simply gone), the holder's lease ends, the leader is woken to hand it on, and with
-- a source index the holder gets an `expired` message (data.reason ARGV[8]). Keys 1-7 are
-- resource_remove.lua's, in the same order.
local res_meta = KEYS[1]
local res_free = KEYS[2]
local res_holder = KEYS[3]
local assigned = KEYS[4]
local pending = KEYS[5]
local pending_ids = KEYS[6]   -- the holder's acceptance ends too
local admissions = KEYS[7]    -- the assignment's record becomes "released"
local res_seq = KEYS[8]
local leases = KEYS[9]        -- optional: zset user -> lease end
local seq = KEYS[10]          -- optional: the queue's message ids (with ARGV[4])
local outbox = KEYS[11]       -- optional: with ARGV[4]
local id = ARGV[1]            -- resource id ("" with an admission id)
local wake_channel = ARGV[2]
local queue = ARGV[3]
local source_arg = ARGV[4]    -- the queue's source index ("" or absent: no message)
local retention_arg = ARGV[5] -- outbox retention, ms
local bus_channel = ARGV[6]
local admission_arg = ARGV[7] -- admission id ("" or absent: by resource id)
local reason = ARGV[8]        -- released | revoked (default released)
-- Returns {state, user, resource, admission id, message id}: "released" and what was
-- released, or (an admission id that has already ended: release is idempotent) the
-- record's state with empty message id.
-- Errors: not_found (unknown resource or admission), not_assigned (the resource is free).
if reason ~= 'revoked' then reason = 'released' end
if admission_arg and admission_arg ~= '' then
  local rec = admissions and redis.call('HGET', admissions, admission_arg)
  local state, user, resource = string.match(rec or '', '^(%S+) (%S+) (%S+)$')
  if not state then return redis.error_reply('not_found no admission ' .. admission_arg) end
  if redis.call('HGET', pending_ids, user) ~= admission_arg or
     redis.call('HGET', assigned, user) ~= resource or
     redis.call('HGET', res_holder, resource) ~= user then
    return {state, user, resource, admission_arg, ''}
  end
  id = resource
end
if redis.call('HEXISTS', res_meta, id) == 0 and not (is_pass(id) and redis.call('HEXISTS', res_holder, id) == 1) then
  return redis.error_reply('not_found resource ' .. id .. ' does not exist')
end
local holder = redis.call('HGET', res_holder, id)
local assignment = holder and pending_ids and redis.call('HGET', assigned, holder) == id and
  redis.call('HGET', pending_ids, holder)
if not drop_holder(res_holder, assigned, pending, pending_ids, id) then
  return redis.error_reply('not_assigned resource ' .. id .. ' is not assigned')
end
if leases then redis.call('ZREM', leases, holder) end
if assignment then
  admission_state(admissions, assignment, 'released')
  report_ends(res_meta, now_ms(), 'released', {assignment})
end
if not is_pass(id) then
  local order = redis.call('INCR', res_seq)
  redis.call('ZADD', res_free, order, id)
end
local message = ''
local source = uint(source_arg or '')
if source and source <= 4095 and seq and outbox then
  local now = now_ms()
  message = string.format('%d', (take_seq(seq, 1, now) + 1) * 4096 + source)
  local line = '{"id":"' .. message .. '","user":' .. cjson.encode(holder) ..
    ',"src":' .. cjson.encode('q:' .. queue) ..
    ',"kind":"expired","data":{"id":' .. cjson.encode(assignment or '') .. ',"queue":' ..
    cjson.encode(queue) .. ',"resource":' .. cjson.encode(id) .. ',"reason":"' .. reason ..
    '"},"ts":' .. string.format('%d', now) .. '}'
  local retention = uint(retention_arg or '') or 0
  redis.call('XADD', outbox, 'MINID', '~', string.format('%d', now - retention), '*', 'm', line)
  redis.call('PUBLISH', bus_channel, line)
end
redis.call('PUBLISH', wake_channel, queue)
return {'released', holder, id, assignment or '', message}
