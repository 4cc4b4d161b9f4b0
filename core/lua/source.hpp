#pragma once
// The call of lua/source.lua (KEYS and ARGV order written once, here) and its reply: the
// source index of a message source (a queue), allocated once.

#include <array>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

/// lua/source.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct source_inputs {
  static constexpr std::string_view script = "source";
  std::string sources{};                           // KEYS: NS:sources
  static constexpr std::size_t required_args = 1;  // held_arg left out when none
  std::string name{}, held_arg{};                  // ARGV: "q:<queue>", the index in use
  static constexpr auto key_fields() {
    return std::array<script_input<source_inputs>, 1>{{{"sources", &source_inputs::sources}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<source_inputs>, 2>{
        {{"name", &source_inputs::name}, {"held_arg", &source_inputs::held_arg}}};
  }
};
/// `held`: the index the caller uses for `queue` (0: none); it comes back if a failover lost
/// it and no other queue took it since.
source_inputs source_for_queue(const keys& k, const std::string& queue, long long held = 0);
/// The index (16..4095).
outcome<long long> source_reply_of(const redis::result& r);

}  // namespace pushonce::lua
