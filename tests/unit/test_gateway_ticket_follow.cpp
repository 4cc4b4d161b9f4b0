// Which sessions follow their user to another ticket after a positions re-read
// (gateway/queue/ticket_follow.hpp).

#include <doctest/doctest.h>

#include "gateway/queue/ticket_follow.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_ticket_follow_unit {

using pushonce::gateway::follow_ticket;

TEST_CASE("ticket follow: the same ticket stays") {
  CHECK_FALSE(follow_ticket(7, 7, 3));
}

TEST_CASE("ticket follow: a user not waiting any more keeps the session's ticket") {
  CHECK_FALSE(follow_ticket(7, 0, 0));
  CHECK_FALSE(follow_ticket(7, 9, 0));  // a ticket without a position does not wait
  CHECK_FALSE(follow_ticket(0, 0, 0));  // pre-queued and still not in the queue
}

TEST_CASE("ticket follow: left and joined again: the session follows the new ticket") {
  auto m = follow_ticket(7, 12, 4);
  REQUIRE(m);
  CHECK(m->from == 7);
  CHECK(m->to == 12);
  CHECK_FALSE(m->was_prequeued());
}

TEST_CASE("ticket follow: a pre-queued session moved in at an opening") {
  auto m = follow_ticket(0, 5, 1);
  REQUIRE(m);
  CHECK(m->was_prequeued());
  CHECK(m->to == 5);
}

}  // namespace test_gateway_ticket_follow_unit
