#include "core/backoff.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_backoff_unit {

using pushonce::backoff;
using ms = std::chrono::milliseconds;

TEST_CASE("backoff: the ceiling doubles up to the maximum; every delay is within it") {
  backoff b(ms{50}, ms{2000}, ms{10}, 42);
  CHECK(b.ceiling_now() == ms{50});
  std::int64_t expected[] = {50, 100, 200, 400, 800, 1600, 2000, 2000};
  for (auto c : expected) {
    CHECK(b.ceiling_now() == ms{c});
    auto d = b.next();
    CHECK(d >= ms{10});
    CHECK(d <= ms{std::max<std::int64_t>(c, 10)});
  }
  b.reset();
  CHECK(b.ceiling_now() == ms{50});
  CHECK(b.attempts() == 0);
}

TEST_CASE("backoff: full jitter spreads the delays over [floor, ceiling]") {
  backoff b(ms{1000}, ms{1000}, ms{0}, 7);
  std::int64_t lo = 1000, hi = 0, sum = 0;
  for (int i = 0; i < 2000; ++i) {
    auto d = b.next().count();
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    sum += d;
  }
  CHECK(lo < 50);   // not a fixed delay...
  CHECK(hi > 950);  // ...nor a narrow band
  CHECK(sum / 2000 > 400);
  CHECK(sum / 2000 < 600);  // uniform: mean near half the ceiling
}

}  // namespace test_backoff_unit
