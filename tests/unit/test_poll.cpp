// gateway/http/poll: the polling routes' paths, cadence and the table of pollers.
#include <doctest/doctest.h>

#include "gateway/http/poll.hpp"

using namespace pushonce::gateway;
using namespace std::chrono_literals;

TEST_CASE("poll: /api/queue/Q/ACTION") {
  auto t = poll_path("/api/queue/drop-1/ticket");
  REQUIRE(t);
  CHECK(t->queue == "drop-1");
  CHECK(t->action == poll_action::ticket);
  CHECK(poll_path("/api/queue/q/join")->action == poll_action::join);
  CHECK(poll_path("/api/queue/q/challenge")->action == poll_action::challenge);
  CHECK_FALSE(poll_path("/api/queue/q/tickets"));
  CHECK_FALSE(poll_path("/api/queue//ticket"));
  CHECK_FALSE(poll_path("/api/queue/q"));
  CHECK_FALSE(poll_path("/api/queue-control"));
}

TEST_CASE("poll: an answer's op names the action as its path does") {
  for (const char* action : {"challenge", "join", "ticket", "accept", "leave"}) {
    auto t = poll_path(std::string("/api/queue/q/") + action);
    REQUIRE(t);
    CHECK(poll_action_name(t->action) == action);
  }
}

TEST_CASE("poll: Retry-After by distance, within a third of the accept timeout") {
  CHECK(poll_retry_after(1, 5, 0) == 1);
  CHECK(poll_retry_after(5000, 600, 0) == 20);  // eta / 10, at most 20
  CHECK(poll_retry_after(5000, 90, 0) == 9);
  CHECK(poll_retry_after(5000, std::nullopt, 0) == 1);
  CHECK(poll_retry_after(5000, 600, 30) == 10);  // an offer lasts 30 s: seen within 10 s
  CHECK(poll_retry_after(0, std::nullopt, 0) == 5);
  CHECK(poll_retry_after(1, 5, 1) == 1);
}

TEST_CASE("poll: answers reused until their Retry-After; silent pollers found") {
  poll_table table(2);
  const auto t0 = poll_table::clock::now();
  bool first = false;
  CHECK_FALSE(table.poll("a", "q", t0, first));
  CHECK(first);
  table.answered("a", "q", poll_answer{202, "{}", 2}, t0);
  CHECK(table.poll("a", "q", t0 + 1s, first));
  CHECK_FALSE(first);
  CHECK_FALSE(table.poll("a", "q", t0 + 2s, first));  // its Retry-After passed: ask Redis
  CHECK(table.silent(t0 + 7s).empty());               // polled at 2 s: 3 x 2 s not yet
  auto gone = table.silent(t0 + 8s);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].first == "a");
  CHECK(table.size() == 0);
  // Bounded: over capacity a poller is answered live, not tracked.
  table.poll("b", "q", t0, first);
  table.poll("c", "q", t0, first);
  table.poll("d", "q", t0, first);
  CHECK(table.size() == 2);
  CHECK(table.forget("b", "q"));
  CHECK_FALSE(table.forget("b", "q"));
}
