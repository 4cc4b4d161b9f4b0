#include "core/dead_letter_entry.hpp"

#include "core/lua/dead_letter_add.hpp"

namespace pushonce {

lua::dead_letter_add_inputs dead_letter_entry(const keys& k, const std::string& id,
                                              const std::string& user, const std::string& src,
                                              const std::string& reason, long long attempts,
                                              const std::string& raw) {
  return lua::dead_letter_add_inputs{.stream = k.plain("dead-letters"),
                                     .maxlen = std::to_string(dead_letters_maxlen),
                                     .id = id,
                                     .user = user,
                                     .src = src,
                                     .reason = reason,
                                     .attempts = std::to_string(attempts),
                                     .line = raw};
}

std::optional<long long> parse_dead_letter_entry_reply(const redis::reply& r) {
  auto n = r.as_int();
  if (r.kind != redis::reply::type::integer || !n || *n < 0) return std::nullopt;
  return n;
}

}  // namespace pushonce
