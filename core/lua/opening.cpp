#include "core/lua/opening.hpp"

#include "core/redis/scripts.hpp"

namespace pushonce::lua {

redis::command opening_draw_command(const keys& k, const std::string& queue, long long token,
                                    long long after, const std::vector<long long>& draw_keys) {
  std::vector<std::string> ks{k.queue(queue, "settings"), k.queue(queue, "prequeue"),
                              k.queue(queue, "prequeue:draw"), k.queue(queue, "fence")};
  std::vector<std::string> as{std::to_string(token), std::to_string(after)};
  for (auto key : draw_keys) as.push_back(std::to_string(key));
  return redis::evalsha_command(redis::get_script("opening_draw"), ks, as);
}

std::optional<opening_draw_reply> parse_opening_draw_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 4) return std::nullopt;
  const auto& e = r.elements;
  return opening_draw_reply{e[0].integer, e[1].integer, e[2].integer != 0, e[3].integer != 0};
}

redis::command opening_move_command(const keys& k, const std::string& queue, long long token,
                                    long long max) {
  std::vector<std::string> ks{k.queue(queue, "settings"),      k.queue(queue, "prequeue"),
                              k.queue(queue, "prequeue:draw"), k.queue(queue, "fence"),
                              k.queue(queue, "waiting"),       k.queue(queue, "ticket"),
                              k.queue(queue, "events"),        k.queue(queue, "prequeue:seq")};
  std::vector<std::string> as{std::to_string(token), std::to_string(max), k.wake_channel(), queue};
  return redis::evalsha_command(redis::get_script("opening_move"), ks, as);
}

std::optional<opening_move_reply> parse_opening_move_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 4) return std::nullopt;
  const auto& e = r.elements;
  return opening_move_reply{e[0].integer, e[1].integer, e[2].integer != 0, e[3].integer != 0};
}

}  // namespace pushonce::lua
