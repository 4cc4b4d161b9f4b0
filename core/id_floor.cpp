#include "core/id_floor.hpp"

#include <charconv>

namespace pushonce {

void id_floor::saw(const std::string& queue, std::string_view id) {
  long long n = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc() || end != id.data() + id.size() || n < 0) return;
  auto& top = top_[queue];
  if (n / 4096 > top) top = n / 4096;
}

long long id_floor::at(const std::string& queue) const {
  auto it = top_.find(queue);
  return it == top_.end() ? 0 : it->second;
}

}  // namespace pushonce
