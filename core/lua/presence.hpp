#pragma once
// The calls of the presence scripts (lua/presence_*.lua) and of lua/abandon.lua, KEYS and
// ARGV order written once, here, with their reply parsers (docs/data-model.md, "Presence").
// Presence is one slot, {presence}: who has how many sessions open on all gateways, on
// each gateway instance, and since when a user has had none.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// NS:{presence}:suffix: suffix "count", "absent", "gws", "gw:<instance>".
std::string presence_key(const keys& k, std::string_view suffix);

/// presence_open.lua: a session of `user` opened on gateway instance `instance`.
redis::command presence_open_command(const keys& k, const std::string& user,
                                     const std::string& instance);
/// presence_close.lua: that session ended.
redis::command presence_close_command(const keys& k, const std::string& user,
                                      const std::string& instance);
/// presence_joined.lua: `user` joined a queue without a session: absent from now unless it
/// has one open.
redis::command presence_joined_command(const keys& k, const std::string& user);

/// presence_fold.lua: a dead instance's sessions counted closed, `batch` users per call.
redis::command presence_fold_command(const keys& k, const std::string& instance,
                                     const std::string& cursor, long long batch);
struct fold_reply {
  std::string cursor;  // pass to the next call
  long long folded = 0;
  bool done = false;  // the instance is gone from NS:{presence}:gws
};
std::optional<fold_reply> parse_fold_reply(const redis::reply& r);

/// presence_reclaim.lua: a live instance that was folded counts its sessions again
/// (`sessions`: user -> sessions open on it; at most 1000 per call).
redis::command presence_reclaim_command(
    const keys& k, const std::string& instance,
    const std::vector<std::pair<std::string, std::size_t>>& sessions);

/// presence_drop.lua: forget up to `max` absent users whose absence began before `horizon`.
redis::command presence_drop_command(const keys& k, long long horizon_ms, long long max);

/// ZRANGEBYSCORE NS:{presence}:absent min max WITHSCORES LIMIT 0 limit (no limit when
/// `limit` is 0): the absent users and the ms their absence began, oldest first.
redis::command absent_range_command(const keys& k, const std::string& min, const std::string& max,
                                    long long limit);
struct absent_user {
  std::string user;
  long long since = 0;  // ms
  bool operator==(const absent_user&) const = default;
};
std::optional<std::vector<absent_user>> parse_absent_range(const redis::reply& r);

/// abandon.lua: `users` (at most 1000) leave `queue` for want of a session.
redis::command abandon_command(const keys& k, const std::string& queue, long long fencing_token,
                               const std::vector<std::string>& users);
struct abandon_reply {
  long long removed = 0;  // from the waiting list
  long long ended = 0;    // assignments handed to expire.lua
};
std::optional<abandon_reply> parse_abandon_reply(const redis::reply& r);

/// A gateway's presence instance: "<gateway id>~<boot>", new for every process, so that a
/// gateway restarted under the same --id never inherits a dead process's sessions.
std::string presence_instance(std::string_view gateway_id, std::string_view boot);
/// The gateway id of an instance (the text before the last '~'); empty when there is none.
std::string gateway_of_instance(std::string_view instance);

}  // namespace pushonce::lua
