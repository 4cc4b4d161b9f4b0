#include "worker/worker_counters.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_worker_counters_unit {

using namespace pushonce;
using worker::worker_counters;
using increments = std::vector<std::pair<std::string_view, std::uint64_t>>;

TEST_CASE("worker_counters: a claim tally adds to the same counters") {
  worker_counters c;
  c.received = 9;
  c += worker::claim_tally{1, 2, 3, 4, 5, 6, 7};
  c += worker::claim_tally{1, 0, 1, 0, 0, 0, 0};
  CHECK(c.won == 2);
  CHECK(c.lost == 2);
  CHECK(c.delivered == 4);
  CHECK(c.redelivered == 4);
  CHECK(c.failed == 5);
  CHECK(c.expired == 6);
  CHECK(c.dead_lettered == 7);
  CHECK(c.received == 9);  // not a claim counter
}

TEST_CASE("stats_increments: what grew since the last flush, under the NS:stats fields") {
  worker_counters flushed, now;
  CHECK(worker::stats_increments(now, flushed).empty());

  now.delivered = 10;
  now.lost = 4;
  now.redelivered = 2;
  now.dead_lettered = 1;
  now.dead_letters_trimmed = 3;
  now.expired = 5;
  now.wait_replicas_timeout = 6;
  now.won = now.failed = now.received = now.dropped = 99;  // not in NS:stats
  CHECK(worker::stats_increments(now, flushed) == increments{{"delivered", 10},
                                                             {"duplicates_suppressed", 4},
                                                             {"redelivered", 2},
                                                             {"dead_lettered", 1},
                                                             {"dead_letters_trimmed", 3},
                                                             {"retention_exceeded", 5},
                                                             {"wait_replicas_timeout", 6}});

  // After a flush only the difference is added; unchanged fields are left out.
  flushed = now;
  now.delivered = 12;
  now.expired = 6;
  CHECK(worker::stats_increments(now, flushed) ==
        increments{{"delivered", 2}, {"retention_exceeded", 1}});
  CHECK(worker::stats_increments(flushed, flushed).empty());
}

}  // namespace test_worker_counters_unit
