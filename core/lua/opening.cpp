#include "core/lua/opening.hpp"

namespace pushonce::lua {

opening_draw_inputs opening_draw_for(const keys& k, const std::string& queue, long long token,
                                     long long after, const std::vector<long long>& draw_keys) {
  opening_draw_inputs in{.settings = k.queue(queue, "settings"),
                         .prequeue = k.queue(queue, "prequeue"),
                         .draw = k.queue(queue, "prequeue:draw"),
                         .fence = k.queue(queue, "fence"),
                         .token_arg = std::to_string(token),
                         .after_arg = std::to_string(after),
                         .more_args = {}};
  for (auto key : draw_keys) in.more_args.push_back(std::to_string(key));
  return in;
}

std::optional<opening_draw_reply> parse_opening_draw_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 4) return std::nullopt;
  const auto& e = r.elements;
  return opening_draw_reply{e[0].integer, e[1].integer, e[2].integer != 0, e[3].integer != 0};
}

opening_move_inputs opening_move_for(const keys& k, const std::string& queue, long long token,
                                     long long max) {
  return opening_move_inputs{.settings = k.queue(queue, "settings"),
                             .prequeue = k.queue(queue, "prequeue"),
                             .draw = k.queue(queue, "prequeue:draw"),
                             .fence = k.queue(queue, "fence"),
                             .waiting = k.queue(queue, "waiting"),
                             .ticket_counter = k.queue(queue, "ticket"),
                             .events = k.queue(queue, "events"),
                             .prequeue_seq = k.queue(queue, "prequeue:seq"),
                             .token_arg = std::to_string(token),
                             .max_arg = std::to_string(max),
                             .wake = k.wake_channel(),
                             .queue = queue};
}

std::optional<opening_move_reply> parse_opening_move_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 4) return std::nullopt;
  const auto& e = r.elements;
  return opening_move_reply{e[0].integer, e[1].integer, e[2].integer != 0, e[3].integer != 0};
}

}  // namespace pushonce::lua
