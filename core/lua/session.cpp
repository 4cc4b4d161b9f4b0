#include "core/lua/session.hpp"

namespace pushonce::lua {

session_inputs session_for(const keys& k, const std::string& user, const std::string& new_epoch,
                           std::optional<std::chrono::milliseconds> idle_ttl,
                           const std::optional<session_since>& since) {
  // An optional argument left empty reads in session.lua as one not given.
  return session_inputs{.meta = k.user(user, "meta"),
                        .epoch = new_epoch,
                        .idle_ttl = idle_ttl ? std::to_string(idle_ttl->count()) : std::string(),
                        .since_epoch = since ? since->epoch : std::string(),
                        .since_offset_arg = since ? std::to_string(since->offset) : std::string(),
                        .force_arg = since && since->offsets_went_back ? "r" : ""};
}

ack_inputs ack_for(const keys& k, const std::string& user, long long offset,
                   const std::optional<std::string>& epoch) {
  // An epoch left empty reads in ack.lua as one not given.
  return ack_inputs{
      .meta = k.user(user, "meta"), .offset = std::to_string(offset), .epoch = epoch.value_or("")};
}

}  // namespace pushonce::lua
