#include "core/redis/hash_slot.hpp"

#include <array>

namespace pushonce::redis {
namespace {

constexpr std::array<std::uint16_t, 256> make_table() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    auto crc = static_cast<std::uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b)
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    t[i] = crc;
  }
  return t;
}

constexpr auto table = make_table();

}  // namespace

std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (unsigned char c : data)
    crc = static_cast<std::uint16_t>((crc << 8) ^ table[((crc >> 8) ^ c) & 0xff]);
  return crc;
}

std::string_view hash_tag(std::string_view key) {
  auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

unsigned hash_slot(std::string_view key) {
  return crc16(hash_tag(key)) & (slot_count - 1);
}

}  // namespace pushonce::redis
