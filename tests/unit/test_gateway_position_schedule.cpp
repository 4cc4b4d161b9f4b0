#include "gateway/position_schedule.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_position_schedule_unit {

using pushonce::gateway::position_schedule;
using namespace std::chrono_literals;

TEST_CASE("position schedule: a quiet queue is pushed after the settle time") {
  position_schedule s(1000ms, 20ms);
  auto t0 = position_schedule::clock::time_point{} + 10s;
  CHECK_FALSE(s.next());
  s.changed("q", t0);
  REQUIRE(s.next());
  CHECK(*s.next() == t0 + 20ms);
  CHECK(s.due(t0 + 10ms).empty());
  CHECK(s.due(t0 + 20ms) == std::vector<std::string>{"q"});
  CHECK_FALSE(s.next());
}

TEST_CASE("position schedule: a moving queue is pushed at most once per interval") {
  position_schedule s(1000ms, 20ms);
  auto t0 = position_schedule::clock::time_point{} + 10s;
  s.changed("q", t0);
  CHECK(s.due(t0 + 20ms).size() == 1);
  for (int i = 1; i < 50; ++i) s.changed("q", t0 + i * 10ms);  // keeps moving
  REQUIRE(s.next());
  CHECK(*s.next() == t0 + 1020ms);  // one interval after the last push
  CHECK(s.due(t0 + 1000ms).empty());
  CHECK(s.due(t0 + 1020ms).size() == 1);
  // It stops moving: the final change is pushed one interval later at most.
  s.changed("q", t0 + 1030ms);
  CHECK(*s.next() == t0 + 2020ms);
  CHECK(s.due(t0 + 2020ms).size() == 1);
  CHECK_FALSE(s.next());
  // Quiet for longer than an interval: the next change goes out after the settle time.
  s.changed("q", t0 + 5000ms);
  CHECK(*s.next() == t0 + 5020ms);
}

TEST_CASE("position schedule: queues keep their own pace; a forgotten queue is not pushed") {
  position_schedule s(100ms, 100ms);  // settle is capped at the interval
  auto t0 = position_schedule::clock::time_point{} + 10s;
  s.changed("a", t0);
  s.changed("b", t0 + 50ms);
  CHECK(*s.next() == t0 + 100ms);
  CHECK(s.due(t0 + 100ms) == std::vector<std::string>{"a"});
  CHECK(*s.next() == t0 + 150ms);
  s.forget("b");
  CHECK_FALSE(s.next());
}

}  // namespace test_gateway_position_schedule_unit
