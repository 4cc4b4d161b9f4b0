#pragma once
// The call of lua/positions.lua (KEYS and ARGV order written once, here) and its reply:
// where some users stand in a queue, and the queue event sequence that is true at.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/positions.lua: its KEYS, named and ordered as in the script's opening lines; the
/// users asked about are all of ARGV.
struct positions_inputs {
  static constexpr std::string_view script = "positions";
  std::string waiting{}, events{};       // KEYS
  std::vector<std::string> more_args{};  // ARGV: the users
  static constexpr auto key_fields() {
    return std::array<script_input<positions_inputs>, 2>{
        {{"waiting", &positions_inputs::waiting}, {"events", &positions_inputs::events}}};
  }
  static constexpr auto arg_fields() { return std::array<script_input<positions_inputs>, 0>{{}}; }
};

/// positions.lua on `queue` for `users` (valid names, checked by the caller).
positions_inputs positions_for(const keys& k, const std::string& queue,
                               std::vector<std::string> users);

/// Where some users stand: one entry per user asked, in order.
struct positions_reply {
  long long seq = 0;  // the queue event these are true at
  struct entry {
    long long position = 0;  // 0: not waiting
    long long ticket = 0;
  };
  std::vector<entry> users;
};
/// positions.lua's {sequence, position_1, ticket_1, ...}; std::nullopt when it is not its shape.
std::optional<positions_reply> parse_positions_reply(const redis::reply& r);

}  // namespace pushonce::lua
