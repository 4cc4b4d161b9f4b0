#pragma once
// The calls of lua/opening_draw.lua and lua/opening_move.lua (KEYS and ARGV order written
// once, here) and their replies: the leader's opening of a queue's pre-queue
// (leader/opening_plan decides which call comes next).

#include <optional>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/opening_draw.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct opening_draw_inputs {
  static constexpr std::string_view script = "opening_draw";
  std::string settings{}, prequeue{}, draw{}, fence{};  // KEYS
  std::string token_arg{}, after_arg{};                 // ARGV
  std::vector<std::string> more_args{};                 // ARGV after the named ones
  static constexpr auto key_fields() {
    return std::array<script_input<opening_draw_inputs>, 4>{
        {{"settings", &opening_draw_inputs::settings},
         {"prequeue", &opening_draw_inputs::prequeue},
         {"draw", &opening_draw_inputs::draw},
         {"fence", &opening_draw_inputs::fence}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<opening_draw_inputs>, 2>{
        {{"token_arg", &opening_draw_inputs::token_arg},
         {"after_arg", &opening_draw_inputs::after_arg}}};
  }
};

/// lua/opening_move.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct opening_move_inputs {
  static constexpr std::string_view script = "opening_move";
  std::string settings{}, prequeue{}, draw{}, fence{}, waiting{}, ticket_counter{}, events{},
      prequeue_seq{};                                   // KEYS
  std::string token_arg{}, max_arg{}, wake{}, queue{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<opening_move_inputs>, 8>{
        {{"settings", &opening_move_inputs::settings},
         {"prequeue", &opening_move_inputs::prequeue},
         {"draw", &opening_move_inputs::draw},
         {"fence", &opening_move_inputs::fence},
         {"waiting", &opening_move_inputs::waiting},
         {"ticket_counter", &opening_move_inputs::ticket_counter},
         {"events", &opening_move_inputs::events},
         {"prequeue_seq", &opening_move_inputs::prequeue_seq}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<opening_move_inputs>, 4>{
        {{"token_arg", &opening_move_inputs::token_arg},
         {"max_arg", &opening_move_inputs::max_arg},
         {"wake", &opening_move_inputs::wake},
         {"queue", &opening_move_inputs::queue}}};
  }
};

/// KEYS: settings, prequeue, prequeue:draw, fence; ARGV: token, after, draw keys...
opening_draw_inputs opening_draw_for(const keys& k, const std::string& queue, long long token,
                                     long long after, const std::vector<long long>& draw_keys);

struct opening_draw_reply {
  long long after = 0;  // the join order to go on after
  long long drawn = 0;
  bool done = false;
  bool due = true;
};
std::optional<opening_draw_reply> parse_opening_draw_reply(const redis::reply& r);

/// KEYS: settings, prequeue, prequeue:draw, fence, waiting, ticket, events, prequeue:seq;
/// ARGV: token, max, wake channel, queue.
opening_move_inputs opening_move_for(const keys& k, const std::string& queue, long long token,
                                     long long max);

struct opening_move_reply {
  long long moved = 0;
  long long left = 0;  // still pre-queued (0: the queue is open)
  bool due = true;
  bool undrawn = false;
};
std::optional<opening_move_reply> parse_opening_move_reply(const redis::reply& r);

}  // namespace pushonce::lua
