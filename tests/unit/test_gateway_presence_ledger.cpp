#include <doctest/doctest.h>

#include "gateway/state/presence_ledger.hpp"

// This file's cases, apart from the other files of its unity batch.
namespace test_gateway_presence_ledger_unit {

using pushonce::gateway::presence_ledger;
using pushonce::gateway::presence_retry_delay;
using namespace std::chrono_literals;

TEST_CASE("presence_ledger: counts the sessions whose open landed, until their close landed") {
  presence_ledger l;
  CHECK(l.counted().empty());
  l.opened("ada");
  l.opened("ada");
  l.opened("bob");
  using row = std::pair<std::string, std::size_t>;
  CHECK(l.counted() == std::vector<row>{{"ada", 2}, {"bob", 1}});
  l.closed("ada");
  l.closed("bob");
  CHECK(l.counted() == std::vector<row>{{"ada", 1}});
  CHECK(l.users() == 1);
  // A close of a user not counted (its open never landed) changes nothing.
  l.closed("cy");
  l.closed("bob");
  CHECK(l.counted() == std::vector<row>{{"ada", 1}});
}

TEST_CASE("presence_retry_delay: 100 ms, doubling, at most 5 s") {
  CHECK(presence_retry_delay(0) == 100ms);
  CHECK(presence_retry_delay(1) == 100ms);
  CHECK(presence_retry_delay(2) == 200ms);
  CHECK(presence_retry_delay(5) == 1600ms);
  CHECK(presence_retry_delay(7) == 5000ms);
  CHECK(presence_retry_delay(1000) == 5000ms);
}

}  // namespace test_gateway_presence_ledger_unit
