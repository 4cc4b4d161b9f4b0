-- published.lua: the frames of deliveries claim.lua made in mode 'n' (--wait-replicas: the
-- caller confirms them with WAIT first) go out: each is published on its user's channel
-- and its claim record "p:<offset>:<attempts>" becomes delivered. Until then a record says
-- the frame may not be out, and any later claim.lua call (the sweeper's re-drive) sends it:
-- a caller that fails or dies between its claim and this call loses no live frame.
-- Publishing a frame twice is harmless: a session drops an offset it has already sent.
--
-- KEYS[i] NS:{bus:N}:u:U:c:<id>, the claim key of message i (as claim.lua's; not written:
--   the user's channel NS:{bus:N}:u:U:ch and the record bucket are named from it). On Redis
--   Cluster every key of one call is in one slot.
-- ARGV[1] publish mode: 'p' PUBLISH (a single Redis), 's' SPUBLISH (Redis Cluster); then
-- for message i: ARGV[2i] its record's field "<id>.<digest>" (claim.lua; a bare decimal id
-- is taken too), ARGV[2i+1] the frame.
-- Returns the number of records made delivered (0 when another call did it first).
-- Error: bad_request (bad mode, argument count, an id that is not decimal, a key without a
-- hash tag).
local mode = ARGV[1]
if mode ~= 'p' and mode ~= 's' then
  return redis.error_reply('bad_request publish mode must be p or s')
end
if #ARGV ~= 1 + 2 * #KEYS then
  return redis.error_reply('bad_request expected an id and a frame per key')
end
local marked = 0
for i = 1, #KEYS do
  local ck, field, frame = KEYS[i], ARGV[2 * i], ARGV[2 * i + 1]
  local id = string.match(field, '^(%d+)%.?%x*$')
  local b = id and record_bucket(ck, id)
  if not b then return redis.error_reply('bad_request a decimal id and a hash-tagged key') end
  local prefix = string.sub(ck, 1, #ck - #id - 2)  -- strips 'c:' .. id
  redis.call(mode == 's' and 'SPUBLISH' or 'PUBLISH', prefix .. 'ch', frame)
  local kind, n, a, unpublished = read_record(redis.call('HGET', b, field))
  if kind == 'delivered' and unpublished then
    redis.call('HSET', b, field, delivered_record(string.format('%d', n), a))
    marked = marked + 1
  end
end
return marked
