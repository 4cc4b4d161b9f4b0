#include "core/wait_estimate.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_wait_estimate_unit {

using namespace pushonce;

// A history as assign.lua records it: assignments (ms, how many), the first since idle.
assignment_record wait_history(const std::vector<std::pair<long long, long long>>& at) {
  std::vector<std::pair<std::string, std::string>> fields;
  fields.emplace_back("first", std::to_string(at.front().first));
  fields.emplace_back("last", std::to_string(at.back().first));
  for (auto [ms, n] : at)
    fields.emplace_back(std::to_string(ms / assignment_bucket_ms), std::to_string(n));
  return parse_assignment_record(fields);
}

// `per_s` assignments every second over [from, to).
void wait_steady(std::vector<std::pair<long long, long long>>& at, long long from, long long to,
                 long long per_s) {
  for (long long t = from; t < to; t += 1000) at.emplace_back(t, per_s);
}

constexpr long long wait_t0 = 1'700'000'003'000;  // not on a bucket boundary

TEST_CASE("wait estimate: nothing to go by: null") {
  CHECK_FALSE(estimate_wait_s(5, {}, wait_t0, false, false));
  std::vector<std::pair<long long, long long>> at;
  wait_steady(at, wait_t0, wait_t0 + 30'000, 10);
  auto r = wait_history(at);
  CHECK(estimate_wait_s(5, r, wait_t0 + 30'000, false, false));
  CHECK_FALSE(estimate_wait_s(5, r, wait_t0 + 30'000, true, false));   // paused
  CHECK_FALSE(estimate_wait_s(5, r, wait_t0 + 30'000, false, true));   // pre-queue
  CHECK_FALSE(estimate_wait_s(0, r, wait_t0 + 30'000, false, false));  // no position
  // Idle for longer than the window: nothing recent.
  CHECK_FALSE(estimate_wait_s(5, r, wait_t0 + 30'000 + assignment_window_ms + 1000, false, false));
}

TEST_CASE("wait estimate: a fresh opening at a steady pace is sane within 10 s") {
  // 10 a second (600 a minute) from the opening on.
  std::vector<std::pair<long long, long long>> at;
  wait_steady(at, wait_t0, wait_t0 + 10'000, 10);
  auto r = wait_history(at);
  CHECK(recent_assignments_per_minute(r, wait_t0 + 10'000) == doctest::Approx(600).epsilon(0.01));
  CHECK(*estimate_wait_s(600, r, wait_t0 + 10'000, false, false) == 60);
  CHECK(*estimate_wait_s(1, r, wait_t0 + 10'000, false, false) == 1);  // rounded up
  // And after minutes of it, the same.
  wait_steady(at, wait_t0 + 10'000, wait_t0 + 400'000, 10);
  r = wait_history(at);
  CHECK(recent_assignments_per_minute(r, wait_t0 + 400'000) == doctest::Approx(600).epsilon(0.02));
  CHECK(*estimate_wait_s(6000, r, wait_t0 + 400'000, false, false) ==
        doctest::Approx(600).epsilon(0.02));
}

TEST_CASE("wait estimate: paused, then resumed") {
  // 2 minutes at 600 a minute, paused 2 minutes (null meanwhile), resumed at 600 a minute.
  std::vector<std::pair<long long, long long>> at;
  wait_steady(at, wait_t0, wait_t0 + 120'000, 10);
  const long long resumed = wait_t0 + 240'000;
  CHECK_FALSE(estimate_wait_s(100, wait_history(at), resumed - 1000, true, false));
  wait_steady(at, resumed, resumed + 25'000, 10);
  auto r = wait_history(at);
  // 25 s after resuming: the pace, not diluted by the pause.
  CHECK(recent_assignments_per_minute(r, resumed + 25'000) == doctest::Approx(600).epsilon(0.1));
  CHECK(*estimate_wait_s(600, r, resumed + 25'000, false, false) ==
        doctest::Approx(60).epsilon(0.1));
  // Resumed at half the pace: the estimate follows within a minute.
  wait_steady(at, resumed + 25'000, resumed + 100'000, 5);
  r = wait_history(at);
  CHECK(recent_assignments_per_minute(r, resumed + 100'000) == doctest::Approx(300).epsilon(0.05));
}

TEST_CASE("wait estimate: a burst of resources, then a slow pace") {
  // A steady 60 a minute, then 2000 at once (resources added), then 60 a minute again.
  std::vector<std::pair<long long, long long>> at;
  wait_steady(at, wait_t0, wait_t0 + 120'000, 1);
  at.emplace_back(wait_t0 + 120'000, 2000);
  wait_steady(at, wait_t0 + 121'000, wait_t0 + 130'000, 1);
  // Just after it, the burst counts (the short window)...
  CHECK(recent_assignments_per_minute(wait_history(at), wait_t0 + 130'000) > 600);
  // ... but the pace comes back once the burst leaves the last minute.
  wait_steady(at, wait_t0 + 130'000, wait_t0 + 190'000, 1);
  CHECK(recent_assignments_per_minute(wait_history(at), wait_t0 + 190'000) ==
        doctest::Approx(60).epsilon(0.1));
  wait_steady(at, wait_t0 + 190'000, wait_t0 + 300'000, 1);
  CHECK(*estimate_wait_s(60, wait_history(at), wait_t0 + 300'000, false, false) ==
        doctest::Approx(60).epsilon(0.1));
}

TEST_CASE("wait estimate: a slow trickle is measured over the longer windows") {
  // One assignment a minute for 5 minutes: the last minute holds at most one.
  std::vector<std::pair<long long, long long>> at;
  for (long long i = 0; i < 5; ++i) at.emplace_back(wait_t0 + i * 60'000, 1);
  auto r = wait_history(at);
  const long long now = wait_t0 + 4 * 60'000 + 30'000;
  const double per_min = recent_assignments_per_minute(r, now);
  CHECK(per_min > 0.7);
  CHECK(per_min < 1.4);
  auto eta = estimate_wait_s(10, r, now, false, false);
  REQUIRE(eta);
  CHECK(*eta > 420);
  CHECK(*eta < 860);
  // A trickle of one every 20 s (3 a minute), long established.
  at.clear();
  for (long long t = wait_t0; t < wait_t0 + 600'000; t += 20'000) at.emplace_back(t, 1);
  r = wait_history(at);
  CHECK(recent_assignments_per_minute(r, wait_t0 + 600'000) == doctest::Approx(3).epsilon(0.15));
}

TEST_CASE("wait estimate: a lone assignment after a long quiet span") {
  // One assignment 3 minutes after the last of a busy spell, and nothing since.
  std::vector<std::pair<long long, long long>> at;
  wait_steady(at, wait_t0, wait_t0 + 60'000, 10);
  at.emplace_back(wait_t0 + 240'000, 1);
  auto r = wait_history(at);
  // 20 s later: the 5-minute window, busy spell included: a figure, not an overflow.
  const double per_min = recent_assignments_per_minute(r, wait_t0 + 260'000);
  CHECK(per_min > 50);
  CHECK(per_min < 300);
}

}  // namespace test_wait_estimate_unit
