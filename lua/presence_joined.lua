-- presence_joined.lua: `user` joined a queue without a session (the admin CLI): its
-- absence counts from now, unless it has a session open.
-- KEYS[1] NS:{presence}:count, KEYS[2] NS:{presence}:absent
-- ARGV[1] user
-- Returns 1 when the user is counted absent from now, 0 when it has a session.
local count = KEYS[1]
local absent = KEYS[2]
local user = ARGV[1]
if tonumber(redis.call('HGET', count, user) or '0') > 0 then return 0 end
redis.call('ZADD', absent, now_ms(), user)
return 1
