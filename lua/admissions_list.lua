-- admissions_list.lua: a queue's live admissions (`pushonce-leader admission list`), read
-- only: every user holding an assignment, with its id, resource, state and deadlines.
-- KEYS[1] assigned (hash user -> resource), KEYS[2] pending:ids (hash user -> id),
-- KEYS[3] pending (zset user -> accept_by; +inf without a deadline), KEYS[4] leases
-- ARGV[1] one user ("" = all)
-- Returns a flat array, six items per admission: id, user, resource, state (assigned or
-- accepted), expires_at ("" without a lease), accept_by ("" without a deadline or once
-- accepted).
local assigned = KEYS[1]
local pending_ids = KEYS[2]
local pending = KEYS[3]
local leases = KEYS[4]
local only = ARGV[1]
local users = {}
if only ~= '' then
  if redis.call('HEXISTS', assigned, only) == 1 then users[1] = only end
else
  local all = redis.call('HKEYS', assigned)
  table.sort(all)
  users = all
end
local out = {}
for _, user in ipairs(users) do
  local resource = redis.call('HGET', assigned, user)
  local id = redis.call('HGET', pending_ids, user) or ''
  local offer = redis.call('ZSCORE', pending, user)
  local state = offer and 'assigned' or 'accepted'
  local accept_by = ''
  if offer and offer ~= 'inf' then accept_by = offer end
  local lease = redis.call('ZSCORE', leases, user) or ''
  for _, v in ipairs({id, user, resource, state, lease, accept_by}) do out[#out + 1] = v end
end
return out
