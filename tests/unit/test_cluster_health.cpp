#include "core/redis/cluster_health.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_health_unit {

using pushonce::redis::slot_range;
using pushonce::redis::slots_without_master;

namespace {
// Three masters with a replica each, as CLUSTER NODES prints them.
const char* healthy =
    "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n"
    "a2 127.0.0.1:7001@17001 master - 0 1700000000000 2 connected 5461-10922\n"
    "a3 127.0.0.1:7002@17002 master - 0 1700000000000 3 connected 10923-16383\n"
    "b1 127.0.0.1:7003@17003 slave a1 0 1700000000000 1 connected\n"
    "b2 127.0.0.1:7004@17004 slave a2 0 1700000000000 2 connected\n"
    "b3 127.0.0.1:7005@17005 slave a3 0 1700000000000 3 connected\n";
}  // namespace

TEST_CASE("slots_without_master: none while every master is up") {
  auto r = slots_without_master(healthy);
  REQUIRE(r);
  CHECK(r->empty());
  CHECK(pushonce::redis::to_string(*r).empty());
}

TEST_CASE("slots_without_master: a failed master's slots until a replica takes them") {
  std::string failed = healthy;
  failed.replace(failed.find("a2 127.0.0.1:7001@17001 master"),
                 std::string("a2 127.0.0.1:7001@17001 master").size(),
                 "a2 127.0.0.1:7001@17001 master,fail");
  auto r = slots_without_master(failed);
  REQUIRE(r);
  CHECK(*r == std::vector<slot_range>{{5461, 10922}});
  CHECK(pushonce::redis::to_string(*r) == "5461-10922");
  // fail? (not yet agreed by the majority) still counts as served: commands are answered.
  std::string pfail = healthy;
  pfail.replace(pfail.find("master - 0 1700000000000 2"), 6, "master,fail?");
  CHECK(slots_without_master(pfail)->empty());
}

TEST_CASE("slots_without_master: unclaimed slots, single slots, migrating entries") {
  const char* nodes =
      "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-99 101 [102->-a2] 102-5460\r\n"
      "a2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-16383\r\n";
  auto r = slots_without_master(nodes);
  REQUIRE(r);
  CHECK(*r == std::vector<slot_range>{{100, 100}});
  CHECK(pushonce::redis::to_string({{100, 100}, {200, 300}}) == "100,200-300");
}

TEST_CASE("slots_without_master: not CLUSTER NODES text") {
  CHECK_FALSE(slots_without_master(""));
  CHECK_FALSE(slots_without_master("ERR This instance has cluster support disabled"));
  CHECK_FALSE(slots_without_master("a1 h master - 0 0 1 connected 9-3"));
  CHECK_FALSE(slots_without_master("a1 h master - 0 0 1 connected 99999"));
}

}  // namespace test_cluster_health_unit
