#include "core/assignment_rate.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_assignment_rate_unit {

using namespace pushonce;

TEST_CASE("assignment rate: nothing assigned, or idle past the window: 0") {
  CHECK(assignments_per_minute({}, 1'000'000) == 0);
  auto r = parse_assignment_record({{"first", "0"}, {"last", "1000"}, {"0", "50"}});
  CHECK(assignments_per_minute(r, 1000 + assignment_window_ms + 1) == 0);
}

TEST_CASE("assignment rate: counted from the first assignment (a fresh opening)") {
  // 600 assignments in the 20 s since the first: 1800 a minute, not diluted by an
  // empty span before it.
  const long long first = 1'000'000'000'000;
  auto r = parse_assignment_record({{"first", std::to_string(first)},
                                    {"last", std::to_string(first + 19'000)},
                                    {std::to_string(first / 10'000), "300"},
                                    {std::to_string(first / 10'000 + 1), "300"},
                                    {"junk", "x"}});
  CHECK(r.buckets.size() == 2);
  CHECK(assignments_per_minute(r, first + 20'000) == doctest::Approx(1800));
  // Within the first second the elapsed time counts as one second.
  auto early = parse_assignment_record({{"first", std::to_string(first)},
                                        {"last", std::to_string(first)},
                                        {std::to_string(first / 10'000), "10"}});
  CHECK(assignments_per_minute(early, first + 100) == doctest::Approx(600));
}

TEST_CASE("assignment rate: the window cuts old buckets (a bucket it cuts counts in part)") {
  const long long now = 10'000'000'000;  // a bucket boundary
  std::vector<std::pair<std::string, std::string>> fields{{"first", "0"},
                                                          {"last", std::to_string(now - 1)}};
  // 100 a bucket for the last 40 buckets: only the last 30 (300 s) count.
  for (long long b = now / 10'000 - 40; b < now / 10'000; ++b)
    fields.emplace_back(std::to_string(b), "100");
  auto r = parse_assignment_record(fields);
  CHECK(assignments_per_minute(r, now) == doctest::Approx(600));
  // 5 s later: the oldest counted bucket is half inside.
  CHECK(assignments_per_minute(r, now + 5'000) ==
        doctest::Approx((29 * 100 + 50) * 60000.0 / 300'000));
}

TEST_CASE("assignment rate: one assignment alone is no rate; it starts with the second") {
  const long long first = 1'000'000'000'000;
  auto one = parse_assignment_record({{"first", std::to_string(first)},
                                      {"last", std::to_string(first)},
                                      {std::to_string(first / 10'000), "1"}});
  CHECK(assignments_per_minute(one, first + 1'000) == 0);
  CHECK(assignments_per_minute(one, first + 60'000) == 0);
  // Two, 30 s apart, read 60 s after the first: 2 a minute.
  auto two = parse_assignment_record({{"first", std::to_string(first)},
                                      {"last", std::to_string(first + 30'000)},
                                      {std::to_string(first / 10'000), "1"},
                                      {std::to_string((first + 30'000) / 10'000), "1"}});
  CHECK(assignments_per_minute(two, first + 60'000) == doctest::Approx(2));
}

}  // namespace test_assignment_rate_unit
