-- admission.lua: an admission's state, or its renewal (POST /api/admission/ID/renew, the
-- gate, `pushonce-leader admission renew`).
-- KEYS[1] admissions (hash id -> "state user resource"), KEYS[2] assigned, KEYS[3]
-- pending:ids, KEYS[4] leases (zset user -> lease end), KEYS[5] settings, KEYS[6]
-- admissions:t (zset id -> keep until: a renewal keeps the record past the new lease end)
-- ARGV[1] admission id, ARGV[2] what: get | renew, ARGV[3] renew: the time of the check
-- that renews (ms; "" = now): a lease live then is extended to that time + session_s
-- Returns {state, user, resource, expires_at ("" without a lease)}.
-- Errors: not_found (no record), expired / released (renew of an ended admission),
-- bad_request.
local admissions = KEYS[1]
local assigned = KEYS[2]
local pending_ids = KEYS[3]
local leases = KEYS[4]
local settings = KEYS[5]
local admissions_t = KEYS[6]
local id = ARGV[1]
local what = ARGV[2]
local at_arg = ARGV[3]
if what ~= 'get' and what ~= 'renew' then
  return redis.error_reply('bad_request what must be get or renew')
end
local rec = redis.call('HGET', admissions, id)
if not rec then return redis.error_reply('not_found no admission ' .. id) end
local state, user, resource = string.match(rec, '^(%S+) (%S+) (%S+)$')
if not state then return redis.error_reply('not_found no admission ' .. id) end
local live = (state == 'assigned' or state == 'accepted') and
  redis.call('HGET', pending_ids, user) == id and redis.call('HGET', assigned, user) == resource
local expires = live and redis.call('ZSCORE', leases, user) or nil
if what == 'renew' then
  if not live then
    local why = state == 'expired' and 'expired' or 'released'
    return redis.error_reply(why .. ' admission ' .. id .. ' has ended')
  end
  local now = now_ms()
  local at = now
  if at_arg and at_arg ~= '' then
    at = uint(at_arg)
    if not at then return redis.error_reply('bad_request the check time must be ms') end
    if at > now then at = now end
  end
  local _, renews, length = lease_terms(settings, now)
  local current = tonumber(expires)
  if renews and current and current >= at and at + length > current then
    expires = string.format('%d', at + length)
    redis.call('ZADD', leases, expires, user)
    keep_record(admissions_t, id, at + length)
  end
end
return {state, user, resource, expires or ''}
