#include "gateway/refresh_schedule.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>
#include <vector>

using pushonce::gateway::refresh_schedule;
using list = std::vector<std::string>;

TEST_CASE("refresh schedule: a flood of changes arms the timer once and refreshes once") {
  refresh_schedule s;
  CHECK(s.changed("q"));  // first change: arm the timer
  for (int i = 0; i < 10000; ++i) CHECK_FALSE(s.changed("q"));
  CHECK(s.timer_armed());
  CHECK(s.timer_fired() == list{"q"});
  CHECK_FALSE(s.timer_armed());
  CHECK(s.refreshing("q"));
  CHECK(s.timer_fired().empty());  // nothing changed since
  CHECK_FALSE(s.refresh_done("q"));
  CHECK_FALSE(s.refreshing("q"));
}

TEST_CASE("refresh schedule: changes during a refresh give exactly one more, after it") {
  refresh_schedule s;
  s.changed("q");
  REQUIRE(s.timer_fired() == list{"q"});
  // The refresh is out; a flood arrives and the timer fires again, twice.
  CHECK(s.changed("q"));
  for (int i = 0; i < 100; ++i) s.changed("q");
  CHECK(s.timer_fired().empty());  // not a second refresh at the same time
  CHECK(s.changed("q"));
  CHECK(s.timer_fired().empty());
  CHECK(s.refresh_done("q"));  // one more is due
  CHECK(s.changed("q"));       // the notifier marks it again: the timer is armed
  CHECK(s.timer_fired() == list{"q"});
  CHECK_FALSE(s.refresh_done("q"));
}

TEST_CASE("refresh schedule: queues are independent; each changed one refreshes once") {
  refresh_schedule s;
  s.changed("a");
  s.changed("b");
  s.changed("a");
  CHECK(s.timer_fired() == list{"a", "b"});
  s.changed("a");
  s.changed("c");
  CHECK(s.timer_fired() == list{"c"});  // a is still out
  CHECK(s.refresh_done("a"));
  CHECK_FALSE(s.refresh_done("b"));
  CHECK_FALSE(s.refresh_done("c"));
}

TEST_CASE("refresh schedule: refreshes per period stay bounded under any change pattern") {
  // A simulated flood: every tick some queue changes; the timer fires every 5 ticks; a
  // refresh takes 7 ticks. Per queue: never two out at once, at most one start per firing.
  refresh_schedule s;
  const list queues = {"q0", "q1", "q2"};
  std::vector<std::pair<int, std::string>> out;  // {end tick, queue}
  int firings = 0, starts = 0;
  for (int tick = 0; tick < 1000; ++tick) {
    for (auto it = out.begin(); it != out.end();) {
      if (it->first == tick) {
        if (s.refresh_done(it->second)) s.changed(it->second);
        it = out.erase(it);
      } else {
        ++it;
      }
    }
    s.changed(queues[static_cast<std::size_t>(tick) % queues.size()]);
    if (tick % 5 == 4 && s.timer_armed()) {
      ++firings;
      for (auto& q : s.timer_fired()) {
        for (auto& [end, other] : out) CHECK(other != q);
        out.emplace_back(tick + 7, q);
        ++starts;
      }
    }
  }
  CHECK(starts <= firings * static_cast<int>(queues.size()));
  CHECK(starts >= 1000 / 10);  // still refreshing: one per queue every other firing at least
}
