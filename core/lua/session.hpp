#pragma once
// The calls of lua/session.lua and lua/ack.lua (KEYS and ARGV order written once, here):
// the user's meta hash (epoch, latest offset, acked offset) as a session sees it.

#include <chrono>
#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// The client's resume point as session.lua checks it (lua/session.lua, ARGV[3..5]).
struct session_since {
  std::string epoch;
  long long offset = 0;
  /// A live session saw the user's offsets go back: rotate the epoch when it is `epoch`.
  bool offsets_went_back = false;
};

/// session.lua: {epoch, offset, acked, rotated}; `new_epoch` is used when the user has none
/// and when the stored epoch is rotated (since.epoch is stored and since.offset is beyond the
/// stored offset, or offsets_went_back); an idle ttl (when given) is set on a meta hash that
/// has no expiry yet.
redis::command session_command(const keys& k, const std::string& user, const std::string& new_epoch,
                               std::optional<std::chrono::milliseconds> idle_ttl,
                               const std::optional<session_since>& since = std::nullopt);

/// ack.lua: the user has seen everything up to `offset` (of `epoch`, when given).
redis::command ack_command(const keys& k, const std::string& user, long long offset,
                           const std::optional<std::string>& epoch);

}  // namespace pushonce::lua
