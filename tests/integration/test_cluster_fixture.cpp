// The cluster fixture itself: 3 masters with a replica each, a slot moved to another
// master with its keys, and a master killed so that its replica takes over.
#include "tests/support/redis_cluster.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tests/support/sync_redis.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_fixture_integration {

using pushonce::test::redis_cluster;
using pushonce::test::sync_redis;

TEST_CASE("redis_cluster: 3 masters with replicas; a slot moves with its keys; a failover" *
          doctest::test_suite("cluster")) {
  redis_cluster cluster;
  REQUIRE(cluster.size() == 6);
  auto masters = cluster.masters();
  REQUIRE(masters.size() == 3);
  const std::string url = cluster.url();
  CHECK(url.rfind("redis://127.0.0.1:", 0) == 0);
  CHECK(std::count(url.begin(), url.end(), ',') == 5);

  // The Redis Cluster spec's example: "123456789" hashes to 0x31C3 = 12739.
  const std::string key = "fixture:{123456789}";
  const unsigned slot = cluster.slot_of(key);
  CHECK(slot == 12739);
  std::uint16_t owner = cluster.master_of(slot);
  {
    sync_redis r(owner);
    CHECK(r.text({"SET", key, "v"}) == "OK");
  }

  // Move the slot to another master: the key goes with it, the old owner answers MOVED.
  std::uint16_t to = masters[0] == owner ? masters[1] : masters[0];
  cluster.move_slot(slot, to);
  CHECK(cluster.master_of(slot) == to);
  {
    sync_redis r(to);
    CHECK(r.text({"GET", key}) == "v");
    sync_redis old(owner);
    auto moved = old.cmd({"GET", key});
    REQUIRE(moved->type == REDIS_REPLY_ERROR);
    CHECK(std::string(moved->str).rfind("MOVED 12739 127.0.0.1:" + std::to_string(to), 0) == 0);
  }
  // Replication is asynchronous: the migrated key may not have reached the replica yet.
  CHECK(cluster.wait_replicated(key) == 1);

  // kill -9 the owner: its replica is promoted and still has the key.
  std::uint16_t promoted = cluster.fail_master_of(slot);
  CHECK(promoted != to);
  CHECK_FALSE(cluster.node_on(to).running());
  sync_redis r(promoted);
  CHECK(r.text({"GET", key}) == "v");
}

}  // namespace test_cluster_fixture_integration
