#pragma once
// The inputs of lua/dead_letter_add.lua (one entry added to NS:dead-letters on its own);
// core/dead_letter_entry builds the call and reads the reply.

#include <string>
#include <string_view>

#include "core/lua/script_inputs.hpp"

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
    using in = dead_letter_add_inputs;
    return std::array<script_input<in>, 7>{{{"maxlen", &in::maxlen},
                                            {"id", &in::id},
                                            {"user", &in::user},
                                            {"src", &in::src},
                                            {"reason", &in::reason},
                                            {"attempts", &in::attempts},
                                            {"line", &in::line}}};
  }
};

}  // namespace pushonce::lua
