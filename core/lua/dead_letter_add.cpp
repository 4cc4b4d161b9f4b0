#include "core/lua/dead_letter_add.hpp"

#include "core/dead_letter_entry.hpp"

namespace pushonce::lua {

dead_letter_add_inputs dead_letter_add_for(const keys& k, const std::string& id,
                                           const std::string& user, const std::string& src,
                                           const std::string& reason, long long attempts,
                                           const std::string& line) {
  return dead_letter_add_inputs{.stream = k.plain("dead-letters"),
                                .maxlen = std::to_string(dead_letters_maxlen),
                                .id = id,
                                .user = user,
                                .src = src,
                                .reason = reason,
                                .attempts = std::to_string(attempts),
                                .line = line};
}

std::optional<long long> parse_dead_letter_add_reply(const redis::reply& r) {
  auto n = r.as_int();
  if (r.kind != redis::reply::type::integer || !n || *n < 0) return std::nullopt;
  return n;
}

}  // namespace pushonce::lua
