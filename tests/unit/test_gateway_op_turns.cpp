#include <doctest/doctest.h>

#include <string>

#include "gateway/session/op_turns.hpp"

// This file's cases, apart from the other files of its unity batch.
namespace test_gateway_op_turns_unit {

using pushonce::gateway::op_turns;

TEST_CASE("op_turns: the first op runs at once, the others wait in arrival order") {
  op_turns<int> t;
  CHECK_FALSE(t.running());
  CHECK(t.arrive(1));
  CHECK(t.running());
  CHECK_FALSE(t.arrive(2));
  CHECK_FALSE(t.arrive(3));
  CHECK_FALSE(t.arrive(4));
  CHECK(t.waiting() == 3);
  // Each finish hands the turn to the oldest waiter; the turn is never free in between.
  CHECK(t.finish() == 2);
  CHECK(t.running());
  CHECK(t.finish() == 3);
  CHECK(t.finish() == 4);
  CHECK(t.running());
  CHECK(t.waiting() == 0);
  // The last op finishes: nobody holds the turn, the next arrival runs at once.
  CHECK_FALSE(t.finish().has_value());
  CHECK_FALSE(t.running());
  CHECK(t.arrive(5));
}

TEST_CASE("op_turns: an op arriving during a hand-over waits behind the woken one") {
  op_turns<std::string> t;
  CHECK(t.arrive("a"));
  CHECK_FALSE(t.arrive("b"));
  auto next = t.finish();
  REQUIRE(next);
  CHECK(*next == "b");
  // "b" is woken but has not run yet: "c" must not overtake it.
  CHECK_FALSE(t.arrive("c"));
  CHECK(t.finish() == std::optional<std::string>("c"));
}

TEST_CASE("op_turns: drain wakes every waiter once; their finishes free the turn") {
  op_turns<int> t;
  CHECK(t.arrive(1));
  CHECK_FALSE(t.arrive(2));
  CHECK_FALSE(t.arrive(3));
  auto woken = t.drain();
  CHECK(woken == std::vector<int>{2, 3});
  CHECK(t.waiting() == 0);
  CHECK(t.drain().empty());
  // The running op and the woken ones give up: after the first finish nobody holds the turn.
  CHECK_FALSE(t.finish().has_value());
  CHECK_FALSE(t.running());
  CHECK_FALSE(t.finish().has_value());
  CHECK_FALSE(t.running());
}

}  // namespace test_gateway_op_turns_unit
