#include "core/id_floor.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

TEST_CASE("id_floor: the highest sequence number made per queue; other text ignored") {
  pushonce::id_floor f;
  CHECK(f.at("a") == 0);
  f.saw("a", std::to_string(7LL * 4096 + 16));
  f.saw("a", std::to_string(5LL * 4096 + 16));  // lower: kept at 7
  f.saw("b", std::to_string(9LL * 4096 + 17));
  CHECK(f.at("a") == 7);
  CHECK(f.at("b") == 9);
  f.saw("a", "4503599627370512");  // 2^52 + 16: seq 2^40
  CHECK(f.at("a") == 1099511627776LL);
  for (const char* bad : {"", "x", "12x", "-4096", "99999999999999999999"}) f.saw("c", bad);
  CHECK(f.at("c") == 0);
}
