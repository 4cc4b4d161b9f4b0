#include "core/lua/positions.hpp"

namespace pushonce::lua {

std::optional<queue_positions> positions_of(const redis::reply& r) {
  const auto& e = r.elements;
  if (!r.is_array() || e.empty() || e.size() % 2 != 1) return std::nullopt;
  queue_positions out;
  out.seq = e[0].integer;
  out.users.reserve(e.size() / 2);
  for (std::size_t i = 1; i + 1 < e.size(); i += 2)
    out.users.push_back({e[i].integer, e[i + 1].integer});
  return out;
}

}  // namespace pushonce::lua
