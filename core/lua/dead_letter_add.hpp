#pragma once
// The call of lua/dead_letter_add.lua (KEYS and ARGV order written once, here) and its
// reply: one entry added to the dead-letter stream NS:dead-letters, trimmed to about
// dead_letters_maxlen entries (core/dead_letter_entry.hpp says when it is used).

#include <optional>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/dead_letter_add.lua: its KEYS and ARGV, named and ordered as in the script's opening
/// lines.
struct dead_letter_add_inputs {
  static constexpr std::string_view script = "dead_letter_add";
  std::string stream{};                                                     // KEYS
  std::string maxlen{}, id{}, user{}, src{}, reason{}, attempts{}, line{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<dead_letter_add_inputs>, 1>{
        {{"stream", &dead_letter_add_inputs::stream}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<dead_letter_add_inputs>, 7>{
        {{"maxlen", &dead_letter_add_inputs::maxlen},
         {"id", &dead_letter_add_inputs::id},
         {"user", &dead_letter_add_inputs::user},
         {"src", &dead_letter_add_inputs::src},
         {"reason", &dead_letter_add_inputs::reason},
         {"attempts", &dead_letter_add_inputs::attempts},
         {"line", &dead_letter_add_inputs::line}}};
  }
};

/// dead_letter_add.lua: the entry {id, user, src, reason, attempts, m: `line`} (the bus
/// message line, or the raw outbox text) on NS:dead-letters.
dead_letter_add_inputs dead_letter_add_for(const keys& k, const std::string& id,
                                           const std::string& user, const std::string& src,
                                           const std::string& reason, long long attempts,
                                           const std::string& line);

/// The entries dead_letter_add.lua's reply says were trimmed; std::nullopt when it is not its.
std::optional<long long> parse_dead_letter_add_reply(const redis::reply& r);

}  // namespace pushonce::lua
