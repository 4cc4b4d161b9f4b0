#include "core/dead_letter_entry.hpp"

#include "core/redis/scripts.hpp"

namespace pushonce {

redis::command dead_letter_entry(const keys& k, const std::string& id, const std::string& user,
                                 const std::string& src, const std::string& reason,
                                 long long attempts, const std::string& raw) {
  std::vector<std::string> ks{k.plain("dead-letters")};
  std::vector<std::string> as{
      std::to_string(dead_letters_maxlen), id, user, src, reason, std::to_string(attempts), raw};
  return redis::evalsha_command(redis::get_script("dead_letter_add"), ks, as);
}

std::optional<long long> parse_dead_letter_entry_reply(const redis::reply& r) {
  auto n = r.as_int();
  if (r.kind != redis::reply::type::integer || !n || *n < 0) return std::nullopt;
  return n;
}

}  // namespace pushonce
