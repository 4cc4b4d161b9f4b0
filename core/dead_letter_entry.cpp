#include "core/dead_letter_entry.hpp"

#include "core/lua/dead_letter_add.hpp"

namespace pushonce {

redis::command dead_letter_entry(const keys& k, const std::string& id, const std::string& user,
                                 const std::string& src, const std::string& reason,
                                 long long attempts, const std::string& raw) {
  return lua::script_command(lua::dead_letter_add_for(k, id, user, src, reason, attempts, raw));
}

std::optional<long long> parse_dead_letter_entry_reply(const redis::reply& r) {
  return lua::parse_dead_letter_add_reply(r);
}

}  // namespace pushonce
