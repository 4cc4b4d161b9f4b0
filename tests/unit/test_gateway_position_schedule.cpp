#include "gateway/queue/position_schedule.hpp"
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

TEST_CASE("position cadence: the first 100 positions and no estimate get the interval") {
  using pushonce::gateway::position_gap;
  CHECK(position_gap(1s, 1, 5000) == 1s);
  CHECK(position_gap(1s, 100, 5000) == 1s);
  CHECK(position_gap(1s, 5000, std::nullopt) == 1s);
  CHECK(position_gap(250ms, 101, std::nullopt) == 250ms);
}

TEST_CASE("position cadence: far from the head, eta_s / 10 between 1 interval and 20 s") {
  using pushonce::gateway::position_gap;
  CHECK(position_gap(1s, 101, 5) == 1s);    // a tenth below the interval
  CHECK(position_gap(1s, 2000, 60) == 6s);  // a minute away: every 6 s
  CHECK(position_gap(1s, 20000, 150) == 15s);
  CHECK(position_gap(1s, 100000, 3600) == 20s);   // never more than 20 s apart
  CHECK(position_gap(30s, 100000, 3600) == 30s);  // an interval over 20 s stands
}

TEST_CASE("position cadence: sessions due by time; a push visits only the due ones") {
  pushonce::gateway::position_due<int> d;
  auto t0 = position_schedule::clock::time_point{} + 10s;
  CHECK_FALSE(d.next());
  d.set(1, t0);
  d.set(2, t0 + 6s);
  d.set(3, t0 + 1s);
  CHECK(*d.next() == t0);
  CHECK(d.due(t0) == std::vector<int>{1});
  CHECK(d.due(t0 + 1s) == std::vector<int>{1, 3});
  d.set(1, t0 + 2s);  // told: due again later
  CHECK(d.due(t0 + 1s) == std::vector<int>{3});
  d.remove(3);
  CHECK(*d.next() == t0 + 2s);
  CHECK(d.due(t0 + 10s) == std::vector<int>{1, 2});
  CHECK(d.size() == 2);
}

TEST_CASE("position schedule: a wake for sessions put off, or earlier for a change") {
  position_schedule s(1s);
  auto t0 = position_schedule::clock::time_point{} + 10s;
  s.changed("q", t0);
  CHECK(s.due(t0 + 20ms).size() == 1);
  s.wake_at("q", t0 + 6s);
  CHECK(*s.next() == t0 + 6s);
  s.wake_at("q", t0 + 9s);  // a later wake does not put it off
  CHECK(*s.next() == t0 + 6s);
  CHECK(s.due(t0 + 6s).size() == 1);
  CHECK_FALSE(s.next());
}

TEST_CASE("position schedule: far positions round to 3 significant digits, halves up") {
  using pushonce::gateway::round_3_significant;
  CHECK(round_3_significant(7) == 7);
  CHECK(round_3_significant(999) == 999);
  CHECK(round_3_significant(1234) == 1230);
  CHECK(round_3_significant(1235) == 1240);
  CHECK(round_3_significant(9995) == 10000);
  CHECK(round_3_significant(10001) == 10000);
  CHECK(round_3_significant(123456) == 123000);
  CHECK(round_3_significant(999999) == 1000000);
  CHECK(round_3_significant(1234567) == 1230000);
}

TEST_CASE("position schedule: near the head every change is told exactly") {
  using pushonce::gateway::next_position_frame;
  using pushonce::gateway::told_position;
  auto t0 = position_schedule::clock::time_point{} + 10s;
  told_position joined{500, 500, false, t0};
  CHECK_FALSE(next_position_frame(joined, 500, t0 + 1s, 10000));  // no change: nothing
  auto f = next_position_frame(joined, 499, t0 + 1s, 10000);
  REQUIRE(f);
  CHECK(f->value == 499);
  CHECK_FALSE(f->approx);
  // 0 turns rounding off: a far position is told exactly too
  auto far = next_position_frame(told_position{123456, 123456, false, t0}, 123455, t0, 0);
  REQUIRE(far);
  CHECK(far->value == 123455);
  CHECK_FALSE(far->approx);
}

TEST_CASE("position schedule: far positions are told when the rounded value changes") {
  using pushonce::gateway::next_position_frame;
  using pushonce::gateway::told_position;
  auto t0 = position_schedule::clock::time_point{} + 10s;
  // the join told 123,456 exactly: the first move says it is approximate now
  auto f = next_position_frame(told_position{123456, 123456, false, t0}, 123400, t0 + 1s, 10000);
  REQUIRE(f);
  CHECK(f->value == 123000);
  CHECK(f->approx);
  CHECK(f->exact == 123400);
  // moves within the same rounded value: nothing
  CHECK_FALSE(next_position_frame(*f, 123100, t0 + 2s, 10000));
  CHECK_FALSE(next_position_frame(*f, 122600, t0 + 30s, 10000));
  // the rounded value changes: told
  auto g = next_position_frame(*f, 122400, t0 + 31s, 10000);
  REQUIRE(g);
  CHECK(g->value == 122000);
  CHECK(g->approx);
  // crossing the threshold: exact again
  auto h = next_position_frame(told_position{10000, 10040, true, t0}, 10000, t0 + 1s, 10000);
  REQUIRE(h);
  CHECK(h->value == 10000);
  CHECK_FALSE(h->approx);
}

TEST_CASE("position schedule: a far position that moves is told at least every 60 s") {
  using pushonce::gateway::approx_refresh;
  using pushonce::gateway::next_position_frame;
  using pushonce::gateway::told_position;
  auto t0 = position_schedule::clock::time_point{} + 10s;
  told_position last{500000, 500200, true, t0};
  CHECK_FALSE(next_position_frame(last, 500100, t0 + approx_refresh - 1ms, 10000));
  auto f = next_position_frame(last, 500100, t0 + approx_refresh, 10000);
  REQUIRE(f);
  CHECK(f->value == 500000);
  CHECK(f->approx);
  CHECK(f->at == t0 + approx_refresh);
  // not moving: nothing, however long
  CHECK_FALSE(next_position_frame(*f, 500100, t0 + 10 * approx_refresh, 10000));
}

}  // namespace test_gateway_position_schedule_unit
