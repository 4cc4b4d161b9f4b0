#include "core/lua/session.hpp"

#include "core/redis/scripts.hpp"

namespace pushonce::lua {

redis::command session_command(const keys& k, const std::string& user, const std::string& new_epoch,
                               std::optional<std::chrono::milliseconds> idle_ttl) {
  std::vector<std::string> ks{k.user(user, "meta")};
  std::vector<std::string> as{new_epoch};
  if (idle_ttl) as.push_back(std::to_string(idle_ttl->count()));
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
