#include "core/lua/session.hpp"

#include "core/redis/scripts.hpp"

namespace pushonce::lua {

redis::command session_command(const keys& k, const std::string& user, const std::string& new_epoch,
                               std::optional<std::chrono::milliseconds> idle_ttl,
                               const std::optional<session_since>& since) {
  // An optional argument left empty reads in session.lua as one not given.
  return script_command(
      session_inputs{.meta = k.user(user, "meta"),
                     .epoch = new_epoch,
                     .idle_ttl = idle_ttl ? std::to_string(idle_ttl->count()) : std::string(),
                     .since_epoch = since ? since->epoch : std::string(),
                     .since_offset_arg = since ? std::to_string(since->offset) : std::string(),
                     .force_arg = since && since->offsets_went_back ? "r" : ""});
}

redis::command ack_command(const keys& k, const std::string& user, long long offset,
                           const std::optional<std::string>& epoch) {
  // An epoch left empty reads in ack.lua as one not given.
  return script_command(ack_inputs{
      .meta = k.user(user, "meta"), .offset = std::to_string(offset), .epoch = epoch.value_or("")});
}

}  // namespace pushonce::lua
