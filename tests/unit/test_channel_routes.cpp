// redis::channel_routes: where each sharded Pub/Sub channel is subscribed on a Redis
// Cluster, and which channels move when the slot map changes (no sockets).
#include "core/redis/channel_routes.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>

#include "core/keys.hpp"
#include "core/redis/hash_slot.hpp"
#include "tests/support/replies.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_channel_routes_unit {

using namespace pushonce::redis;
using pushonce::test::array;
using pushonce::test::integer;
using pushonce::test::str;

namespace {

reply range(long long first, long long last, long long port) {
  return array({integer(first), integer(last), array({str("127.0.0.1"), integer(port)})});
}

// Three masters on ports 7000-7002 with the usual even split of the slots.
slot_map three(long long p0 = 7000, long long p1 = 7001, long long p2 = 7002) {
  auto m =
      slot_map::parse(array({range(0, 5460, p0), range(5461, 10922, p1), range(10923, 16383, p2)}),
                      node_address{"127.0.0.1", 7000});
  REQUIRE(m);
  return *m;
}

std::string node_of_slot(unsigned slot) {
  if (slot <= 5460) return "127.0.0.1:7000";
  if (slot <= 10922) return "127.0.0.1:7001";
  return "127.0.0.1:7002";
}

}  // namespace

TEST_CASE("channel_routes: a channel belongs to its hash tag's slot's master") {
  auto m = three();
  pushonce::keys k("pushonce", 16);
  for (const char* user : {"alice", "bob", "carol", "dave"}) {
    auto ch = k.user_channel(user);
    CHECK(hash_slot(ch) == hash_slot(k.user(user, "inbox")));  // the user's slot
    CHECK(channel_routes::owner(m, ch) == node_of_slot(hash_slot(ch)));
  }
  for (unsigned shard = 0; shard < 16; ++shard) {
    auto ch = k.bus_channel(shard);
    CHECK(ch == "pushonce:{" + k.bus_tag(shard) + "}:ch");
    CHECK(hash_slot(ch) == hash_slot(k.bus(shard, "outbox")));  // publish.lua's slot
  }
  // No master serves the slot: no owner.
  auto half = slot_map::parse(array({range(0, 100, 7000)}), node_address{"127.0.0.1", 7000});
  REQUIRE(half);
  CHECK(channel_routes::owner(*half, "{x}") == (hash_slot("x") <= 100 ? "127.0.0.1:7000" : ""));
}

TEST_CASE("channel_routes: new channels are unplaced; plan places them; nothing moves after") {
  channel_routes r;
  CHECK(r.want("a"));
  CHECK(!r.want("a"));
  CHECK(r.want("b"));
  CHECK(r.unplaced() == 2);
  auto m = three();
  auto plan = r.plan(m);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0] == channel_routes::move{"a", "", node_of_slot(hash_slot("a"))});
  CHECK(plan[1] == channel_routes::move{"b", "", node_of_slot(hash_slot("b"))});
  for (auto& mv : plan) r.place(mv.channel, mv.to);
  CHECK(r.unplaced() == 0);
  CHECK(r.plan(m).empty());
  CHECK(r.placed("a") == node_of_slot(hash_slot("a")));
  auto on_a = r.on(node_of_slot(hash_slot("a")));
  CHECK(std::find(on_a.begin(), on_a.end(), "a") != on_a.end());
}

TEST_CASE("channel_routes: a migrated slot moves only its channels to the new owner") {
  channel_routes r;
  std::vector<std::string> chans;
  for (int i = 0; i < 50; ++i) chans.push_back("ch" + std::to_string(i));
  auto m = three();
  for (auto& ch : chans) {
    r.want(ch);
    r.place(ch, channel_routes::owner(m, ch));
  }
  // The slot of ch7 moves to the third master (as CLUSTER SETSLOT ... NODE does).
  unsigned slot = hash_slot("ch7");
  auto moved = m;
  moved.assign(slot, node_address{"127.0.0.1", 7002});
  auto plan = r.plan(moved);
  std::size_t same_slot = 0;
  for (auto& ch : chans) same_slot += hash_slot(ch) == slot;
  if (node_of_slot(slot) == "127.0.0.1:7002") {
    CHECK(plan.empty());
  } else {
    REQUIRE(plan.size() == same_slot);
    for (auto& mv : plan) {
      CHECK(hash_slot(mv.channel) == slot);
      CHECK(mv.from == node_of_slot(slot));
      CHECK(mv.to == "127.0.0.1:7002");
    }
  }
  // A failover: the first master's replica (port 7100) serves its slots now.
  auto failed = three(7100);
  auto fo = r.plan(failed);
  for (auto& mv : fo) {
    CHECK(mv.from == "127.0.0.1:7000");
    CHECK(mv.to == "127.0.0.1:7100");
  }
  std::size_t on_first = r.on("127.0.0.1:7000").size();
  CHECK(fo.size() == on_first);
  CHECK(on_first > 0);
}

TEST_CASE("channel_routes: a node giving a channel up leaves it unplaced until the next map") {
  channel_routes r;
  auto m = three();
  r.want("a");
  auto owner = channel_routes::owner(m, "a");
  r.place("a", owner);
  CHECK(!r.unplace("a", "127.0.0.1:9999"));  // not there: nothing changes
  CHECK(r.placed("a") == owner);
  CHECK(r.unplace("a", owner));
  CHECK(r.placed("a").empty());
  CHECK(r.unplaced() == 1);
  CHECK(!r.unplace("a", owner));  // once
  auto plan = r.plan(m);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].from.empty());
  CHECK(plan[0].to == owner);
  // Not wanted any more: no plan, no placement.
  CHECK(r.drop("a").empty());
  CHECK(!r.wants("a"));
  CHECK(r.plan(m).empty());
  r.place("a", owner);
  CHECK(!r.wants("a"));
  // A slot nobody serves: the move has no destination.
  r.want("b");
  auto none = slot_map::parse(array({}), node_address{"127.0.0.1", 7000});
  REQUIRE(none);
  auto p = r.plan(*none);
  REQUIRE(p.size() == 1);
  CHECK(p[0].to.empty());
}

}  // namespace test_channel_routes_unit
