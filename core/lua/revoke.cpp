#include "core/lua/revoke.hpp"

namespace pushonce::lua {

std::string revoked_key(const keys& k) {
  return k.ns() + ":{revoked}";
}

std::string control_channel(const keys& k) {
  return k.plain("control");
}

revoke_inputs revoke_for(const keys& k, const std::string& user, bool revoke,
                         std::chrono::milliseconds lifetime) {
  return revoke_inputs{.revoked = revoked_key(k),
                       .expiries = revoked_key(k) + ":until",
                       .channel = control_channel(k),
                       .user = user,
                       .flag = revoke ? "1" : "0",
                       .lifetime_arg = std::to_string(lifetime.count())};
}

std::optional<revoke_reply> parse_revoke_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 3) return std::nullopt;
  auto at = r.at(0).as_int();
  auto until = r.at(1).as_int();
  auto n = r.at(2).as_int();
  if (!at || !until || !n) return std::nullopt;
  return revoke_reply{*at, *until, *n};
}

redis::command revocations_snapshot_command(const keys& k) {
  return {"HGETALL", revoked_key(k)};
}

}  // namespace pushonce::lua
