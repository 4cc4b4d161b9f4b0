#include "core/lua/positions.hpp"

namespace pushonce::lua {

positions_inputs positions_for(const keys& k, const std::string& queue,
                               std::vector<std::string> users) {
  return positions_inputs{.waiting = k.queue(queue, "waiting"),
                          .events = k.queue(queue, "events"),
                          .more_args = std::move(users)};
}

std::optional<positions_reply> parse_positions_reply(const redis::reply& r) {
  const auto& e = r.elements;
  if (!r.is_array() || e.empty() || e.size() % 2 != 1) return std::nullopt;
  positions_reply out;
  out.seq = e[0].integer;
  out.users.reserve(e.size() / 2);
  for (std::size_t i = 1; i + 1 < e.size(); i += 2)
    out.users.push_back({e[i].integer, e[i + 1].integer});
  return out;
}

}  // namespace pushonce::lua
