-- claim_batch.lua: the race for one bus payload (a batch of messages that every worker
-- hears). The first worker to call it for the batch wins it and claims the messages with
-- claim.lua; for every other worker the claim ends here: one key, no message text, so a
-- loser's claim costs next to nothing. claim.lua, not this key, keeps each message
-- delivered at most once (the sweeper calls it without racing here first).
-- The key lives one lease. A winner that dies before its claim.lua call leaves the batch
-- undelivered until the recovery sweeper re-drives its outbox entry (entries older than a
-- lease), as when Pub/Sub drops a message. A winner that finished the whole batch may turn
-- the key into the sweeper's mark "d:<n>:<digest>" for the dedup window (a plain SET, see
-- core/lua/claim.hpp batch_done_command): a worker that hears the batch later loses to it.
-- KEYS[1] NS:b:<id of the batch's first message>
-- ARGV[1] owner token, ARGV[2] lease ms
-- Returns 1 when the caller won the batch, 0 when another worker did.
-- Error: bad_request (empty owner, bad lease).
local batch = KEYS[1]
local owner = ARGV[1]
local lease_arg = ARGV[2]
local lease = uint(lease_arg)
if owner == nil or owner == '' or not lease or lease == 0 then
  return redis.error_reply('bad_request owner must not be empty, lease a positive integer')
end
if redis.call('SET', batch, owner, 'NX', 'PX', lease_arg) then return 1 end
return 0
