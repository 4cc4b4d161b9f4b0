#pragma once
// The calls of lua/session.lua and lua/ack.lua (KEYS and ARGV order written once, here):
// the user's meta hash (epoch, latest offset, acked offset) as a session sees it.

#include <chrono>
#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// session.lua: {epoch, offset, acked}; `new_epoch` is used when the user has none; an idle
/// ttl (when given) is set on a meta hash that has no expiry yet.
redis::command session_command(const keys& k, const std::string& user, const std::string& new_epoch,
                               std::optional<std::chrono::milliseconds> idle_ttl);

/// ack.lua: the user has seen everything up to `offset` (of `epoch`, when given).
redis::command ack_command(const keys& k, const std::string& user, long long offset,
                           const std::optional<std::string>& epoch);

}  // namespace pushonce::lua
