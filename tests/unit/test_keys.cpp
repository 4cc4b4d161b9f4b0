#include "core/keys.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "core/layout.hpp"
#include "core/redis/hash_slot.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_keys_unit {

using pushonce::keys;

TEST_CASE("queue, user and plain keys carry the namespace and hash tag") {
  keys k("pushonce");
  CHECK(k.ns() == "pushonce");
  CHECK(k.queue("default", "waiting") == "pushonce:{q:default}:waiting");
  CHECK(k.queue("default", "res:meta") == "pushonce:{q:default}:res:meta");
  CHECK(k.queue("q1", "outbox") == "pushonce:{q:q1}:outbox");
  CHECK(k.user("alice", "meta") == "pushonce:{bus:0}:u:alice:meta");
  CHECK(k.user("alice", "inbox") == "pushonce:{bus:0}:u:alice:inbox");
  CHECK(k.claim("alice", "69633") == "pushonce:{bus:0}:u:alice:c:69633");
  CHECK(k.user_channel("alice") == "pushonce:{bus:0}:u:alice:ch");
  CHECK(k.plain("stats") == "pushonce:stats");
  CHECK(k.plain("sources") == "pushonce:sources");
  CHECK(k.plain("leader:fencing") == "pushonce:leader:fencing");
  CHECK(k.leader_fencing(false) == "pushonce:leader:fencing");
  CHECK(k.leader_fencing(true) == "pushonce:{pushonce:leader}:fencing");
  CHECK(k.plain("worker:w1") == "pushonce:worker:w1");
  CHECK(k.bus_channel() == "pushonce:bus");
  CHECK(k.wake_channel() == "pushonce:leader:wake");
}

TEST_CASE("bus shard keys") {
  keys one("ns1");
  CHECK(one.shards() == 1);
  CHECK(one.bus(0, "seq") == "ns1:{bus:0}:seq");
  CHECK(one.idem(0, "alice", "order-17") == "ns1:{bus:0}:idem:alice:order-17");
  CHECK_THROWS(one.bus(1, "seq"));
  keys k("ns1", 16);
  CHECK(k.shards() == 16);
  CHECK(k.bus(3, "outbox") == "ns1:{" + k.bus_tag(3) + "}:outbox");
  CHECK(k.idem(12, "bob", "k") == "ns1:{" + k.bus_tag(12) + "}:idem:bob:k");
  CHECK_THROWS_AS(keys("ns1", 0), std::invalid_argument);
}

TEST_CASE("a shard's tag puts it in its own equal slot range") {
  for (unsigned shards : {1u, 2u, 3u, 5u, 16u}) {
    keys k("ns", shards);
    for (unsigned n = 0; n < shards; ++n) {
      const auto& tag = k.bus_tag(n);
      auto base = "bus:" + std::to_string(n);
      CHECK(tag.rfind(base, 0) == 0);  // bus:N or bus:N:K
      auto slot = pushonce::redis::hash_slot(k.bus(n, "seq"));
      CHECK(slot >= n * 16384 / shards);
      CHECK(slot < (n + 1) * 16384 / shards);
    }
  }
  // {bus:3} already lies in the 4th of 16 ranges (slot 3673): no suffix.
  CHECK(keys("ns", 16).bus_tag(3) == "bus:3");
}

TEST_CASE("a user's keys are in its shard's slot") {
  keys k("ns", 16);
  for (const char* u : {"alice", "bob", "carol", "u@x"}) {
    auto tag = "{" + k.bus_tag(k.shard_of(u)) + "}";
    CHECK(k.user(u, "meta") == "ns:" + tag + ":u:" + u + ":meta");
    CHECK(k.user_channel(u) == "ns:" + tag + ":u:" + u + ":ch");
    CHECK(k.claim(u, "69633") == "ns:" + tag + ":u:" + u + ":c:69633");
    CHECK(k.claim_bucket(u, "69633") == "ns:" + tag + ":c:1:0");
    auto slot = pushonce::redis::hash_slot(k.bus(k.shard_of(u), "outbox"));
    CHECK(pushonce::redis::hash_slot(k.user(u, "inbox")) == slot);
    CHECK(pushonce::redis::hash_slot(k.claim_bucket(u, "4096")) == slot);
  }
}

TEST_CASE("the namespace is used verbatim") {
  keys k("test.a-b");
  CHECK(k.queue("default", "seq") == "test.a-b:{q:default}:seq");
  CHECK(k.user_channel("u@x") == "test.a-b:{bus:0}:u:u@x:ch");
}

TEST_CASE("shard_of is crc32(user) mod shards") {
  // CRC-32/IEEE check value: crc32("123456789") = 0xCBF43926 = 3421780262.
  CHECK(keys::shard_of("123456789", 1000) == 3421780262u % 1000);
  CHECK(keys::shard_of("123456789", 7) == 3421780262u % 7);
  CHECK(keys::shard_of("", 16) == 0);  // crc32("") = 0
  CHECK(keys::shard_of("alice", 1) == 0);
  CHECK(keys::shard_of("alice", 0) == 0);
}

TEST_CASE("shard_of is stable and below shards") {
  std::set<unsigned> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string user = "user" + std::to_string(i);
    unsigned s = keys::shard_of(user, 16);
    CHECK(s < 16);
    CHECK(keys::shard_of(user, 16) == s);
    seen.insert(s);
  }
  CHECK(seen.size() == 16);  // spreads over every shard
}

TEST_CASE("layout: recorded by the first process, a different --bus-shards is a conflict") {
  keys k("ns", 4);
  CHECK(pushonce::layout_command(k) ==
        pushonce::redis::command{"SET", "ns:layout", "bus-shards=4", "NX", "GET", "PX", "10000"});
  CHECK(pushonce::layout_renew_command(k) ==
        pushonce::redis::command{"PEXPIRE", "ns:layout", "10000"});
  CHECK_FALSE(pushonce::layout_conflict(k, std::nullopt));  // this call recorded it
  CHECK_FALSE(pushonce::layout_conflict(k, "bus-shards=4"));
  auto conflict = pushonce::layout_conflict(k, "bus-shards=16");
  REQUIRE(conflict);
  CHECK(conflict->find("bus-shards=16") != std::string::npos);
  CHECK(conflict->find("--bus-shards 4") != std::string::npos);
}

}  // namespace test_keys_unit
