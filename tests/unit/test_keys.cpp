#include "core/keys.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <set>
#include <string>

using pushonce::keys;

TEST_CASE("queue, user and plain keys carry the namespace and hash tag") {
  keys k("pushonce");
  CHECK(k.ns() == "pushonce");
  CHECK(k.queue("default", "waiting") == "pushonce:{q:default}:waiting");
  CHECK(k.queue("default", "res:meta") == "pushonce:{q:default}:res:meta");
  CHECK(k.queue("q1", "outbox") == "pushonce:{q:q1}:outbox");
  CHECK(k.user("alice", "meta") == "pushonce:{u:alice}:meta");
  CHECK(k.user("alice", "inbox") == "pushonce:{u:alice}:inbox");
  CHECK(k.claim("alice", "69633") == "pushonce:{u:alice}:c:69633");
  CHECK(k.user_channel("alice") == "pushonce:{u:alice}:ch");
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
  keys k("ns1");
  CHECK(k.bus(0, "seq") == "ns1:{bus:0}:seq");
  CHECK(k.bus(3, "outbox") == "ns1:{bus:3}:outbox");
  CHECK(k.idem(0, "alice", "order-17") == "ns1:{bus:0}:idem:alice:order-17");
  CHECK(k.idem(12, "bob", "k") == "ns1:{bus:12}:idem:bob:k");
}

TEST_CASE("the namespace is used verbatim") {
  keys k("test.a-b");
  CHECK(k.queue("default", "seq") == "test.a-b:{q:default}:seq");
  CHECK(k.user_channel("u@x") == "test.a-b:{u:u@x}:ch");
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
