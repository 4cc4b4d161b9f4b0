#include "core/random_hex.hpp"

#include <random>

namespace pushonce {

std::string random_hex(std::size_t chars) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string s(chars, '0');
  auto v = rng();
  int left = 16;
  for (auto& c : s) {
    if (left == 0) {
      v = rng();
      left = 16;
    }
    c = hex[v & 15];
    v >>= 4;
    --left;
  }
  return s;
}

}  // namespace pushonce
