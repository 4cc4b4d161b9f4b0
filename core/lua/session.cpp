#include "core/lua/session.hpp"

#include "core/redis/scripts.hpp"

namespace pushonce::lua {

redis::command session_command(const keys& k, const std::string& user, const std::string& new_epoch,
                               std::optional<std::chrono::milliseconds> idle_ttl,
                               const std::optional<session_since>& since) {
  std::vector<std::string> ks{k.user(user, "meta")};
  std::vector<std::string> as{new_epoch};
  if (idle_ttl || since) as.push_back(idle_ttl ? std::to_string(idle_ttl->count()) : "");
  if (since) {
    as.push_back(since->epoch);
    as.push_back(std::to_string(since->offset));
    if (since->offsets_went_back) as.push_back("r");
  }
  return redis::evalsha_command(redis::get_script("session"), ks, as);
}

redis::command ack_command(const keys& k, const std::string& user, long long offset,
                           const std::optional<std::string>& epoch) {
  std::vector<std::string> ks{k.user(user, "meta")};
  std::vector<std::string> as{std::to_string(offset)};
  if (epoch) as.push_back(*epoch);
  return redis::evalsha_command(redis::get_script("ack"), ks, as);
}

}  // namespace pushonce::lua
