-- prelude.lua: helpers every script starts with (cmake/embed_scripts.cmake prepends this
-- file to each lua/*.lua when it embeds them; tests/integration/lua_smoke.sh does the same).

-- A non-negative integer argument (at most 15 digits), or nil.
local function uint(v)
  if type(v) ~= 'string' or not string.match(v, '^%d+$') or #v > 15 then return nil end
  return tonumber(v)
end

-- Redis's clock in ms (scripts never trust the caller's clock).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Resource `id` is no longer held: forget its holder, and when that user's assignment is
-- this resource, end the assignment and its pending acceptance. Returns the holder or nil.
local function drop_holder(holder, assigned, pending, pending_ids, id)
  local user = redis.call('HGET', holder, id)
  if not user then return nil end
  redis.call('HDEL', holder, id)
  if redis.call('HGET', assigned, user) == id then
    redis.call('HDEL', assigned, user)
    if pending_ids then
      redis.call('ZREM', pending, user)
      redis.call('HDEL', pending_ids, user)
    end
  end
  return user
end

