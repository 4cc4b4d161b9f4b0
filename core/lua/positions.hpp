#pragma once
// The call of lua/positions.lua: where some users stand in a queue, with the queue event
// sequence they are true at (one call per queue, however many users).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce {

/// Where some users stand (positions.lua): one entry per user asked, in order.
struct queue_positions {
  long long seq = 0;  // the queue event these are true at
  struct entry {
    long long position = 0;  // 0: not waiting
    long long ticket = 0;
  };
  std::vector<entry> users;
};

}  // namespace pushonce

namespace pushonce::lua {

/// lua/positions.lua: its KEYS, named and ordered as in the script's opening lines; the
/// users are all of ARGV.
struct positions_inputs {
  static constexpr std::string_view script = "positions";
  std::string waiting{}, events{};       // KEYS
  std::vector<std::string> more_args{};  // ARGV: the users (at most 100,000)
  static constexpr auto key_fields() {
    return std::array<script_input<positions_inputs>, 2>{
        {{"waiting", &positions_inputs::waiting}, {"events", &positions_inputs::events}}};
  }
  static constexpr auto arg_fields() { return std::array<script_input<positions_inputs>, 0>{{}}; }
};

inline positions_inputs positions_for(const keys& k, const std::string& queue,
                                      std::vector<std::string> users) {
  return positions_inputs{.waiting = k.queue(queue, "waiting"),
                          .events = k.queue(queue, "events"),
                          .more_args = std::move(users)};
}

/// positions.lua's reply {sequence, position_1, ticket_1, ...}; std::nullopt when it is not
/// that shape.
std::optional<queue_positions> positions_of(const redis::reply& r);

}  // namespace pushonce::lua
