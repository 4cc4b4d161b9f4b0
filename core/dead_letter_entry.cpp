#include "core/dead_letter_entry.hpp"

namespace pushonce {

redis::command dead_letter_entry(const keys& k, const std::string& id, const std::string& user,
                                 const std::string& src, const std::string& reason,
                                 long long attempts, const std::string& raw) {
  return {"XADD",     k.plain("dead-letters"),
          "MAXLEN",   "~",
          "10000",    "*",
          "id",       id,
          "user",     user,
          "src",      src,
          "reason",   reason,
          "attempts", std::to_string(attempts),
          "m",        raw};
}

}  // namespace pushonce
