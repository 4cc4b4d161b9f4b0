// The socket-free pieces of the Redis Cluster client: the slot function, where a command
// goes, the slot map and redirections, and what is done with each cluster error.
#include "core/redis/hash_slot.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "core/keys.hpp"
#include "core/redis/cluster_retry.hpp"
#include "core/redis/command_keys.hpp"
#include "core/redis/slot_map.hpp"
#include "tests/support/replies.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_routing_unit {

using namespace pushonce::redis;
using pushonce::test::array;
using pushonce::test::integer;
using pushonce::test::str;
using namespace std::chrono_literals;

namespace {
reply error_reply(std::string text) {
  return reply::make_error(std::move(text));
}
reply range(long long first, long long last, std::string host, long long port) {
  return array({integer(first), integer(last), array({str(std::move(host)), integer(port)})});
}
}  // namespace

TEST_CASE("crc16 and hash_slot: the cluster spec's vectors and hash tags") {
  CHECK(crc16("123456789") == 0x31C3);  // the spec's reference value
  CHECK(crc16("") == 0);
  CHECK(hash_slot("123456789") == 12739);
  // Values redis-server 7.0 gives for CLUSTER KEYSLOT.
  CHECK(hash_slot("foo") == 12182);
  CHECK(hash_slot("bar") == 5061);
  CHECK(hash_slot("user1000") == 3443);
  // Hash tags: the first {...} with something inside.
  CHECK(hash_tag("{user1000}.following") == "user1000");
  CHECK(hash_slot("{user1000}.following") == hash_slot("user1000"));
  CHECK(hash_slot("{user1000}.followers") == hash_slot("{user1000}.following"));
  CHECK(hash_tag("foo{}{bar}") == "foo{}{bar}");  // an empty first tag: the whole key
  CHECK(hash_tag("foo{{bar}}zap") == "{bar");
  CHECK(hash_tag("foo{bar}{zap}") == "bar");
  CHECK(hash_tag("foo{bar") == "foo{bar");
  // The project's keys: a user's keys share one slot, and so do a queue's.
  pushonce::keys k("ns");
  CHECK(hash_slot(k.user("alice", "inbox")) == hash_slot(k.claim("alice", "m1")));
  CHECK(hash_slot(k.user_channel("alice")) == hash_slot(k.user("alice", "meta")));
  CHECK(hash_slot(k.queue("q", "waiting")) == hash_slot(k.queue("q", "outbox")));
  // leader_lease.lua's two keys: one slot on a cluster (not on a single Redis: the old name).
  CHECK(hash_slot(k.leader_fencing(true)) == hash_slot(k.plain("leader")));
  CHECK(hash_slot(k.leader_fencing(false)) != hash_slot(k.plain("leader")));
}

TEST_CASE("command_keys and route_of") {
  CHECK(command_keys({"GET", "k"}) == std::vector<std::string_view>{"k"});
  CHECK(command_keys({"EVALSHA", "sha", "2", "a", "b", "arg"}) ==
        std::vector<std::string_view>{"a", "b"});
  CHECK(command_keys({"evalsha", "sha", "0", "arg"}).empty());
  CHECK(command_keys({"XINFO", "STREAM", "s"}) == std::vector<std::string_view>{"s"});
  CHECK(command_keys({"XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "0"}) ==
        std::vector<std::string_view>{"a", "b"});
  CHECK(command_keys({"DEL", "a", "b"}) == std::vector<std::string_view>{"a", "b"});
  CHECK(command_keys({"PING"}).empty());
  CHECK(command_keys({"PUBLISH", "ch", "x"}).empty());

  auto r = route_of({"EVALSHA", "sha", "1", "{u:alice}:inbox", "x"});
  CHECK(r.where == command_route::kind::slot);
  CHECK(r.slot == hash_slot("u:alice"));
  CHECK(route_of({"SPUBLISH", "ch", "x"}).slot == hash_slot("ch"));
  CHECK(route_of({"PING"}).where == command_route::kind::any);
  CHECK(route_of({"TIME"}).where == command_route::kind::any);
  CHECK(route_of({"SCRIPT", "LOAD", "return 1"}).where == command_route::kind::all);

  CHECK_FALSE(spans_slots({"EVALSHA", "sha", "2", "{u:a}:x", "{u:a}:y"}));
  CHECK(spans_slots({"EVALSHA", "sha", "2", "{u:a}:x", "{u:b}:y"}));
  CHECK(spans_slots({"DEL", "a", "b"}));
  CHECK_FALSE(spans_slots({"GET", "a"}));
}

TEST_CASE("parse_redirect") {
  auto m = parse_redirect(error_reply("MOVED 3999 127.0.0.1:6381"));
  REQUIRE(m);
  CHECK_FALSE(m->ask);
  CHECK(m->slot == 3999);
  CHECK(m->to == node_address{"127.0.0.1", 6381});
  auto a = parse_redirect(error_reply("ASK 12 [::1]:7000"));
  REQUIRE(a);
  CHECK(a->ask);
  CHECK(a->to == node_address{"::1", 7000});
  CHECK(a->to.key() == "[::1]:7000");
  CHECK_FALSE(parse_redirect(error_reply("ERR nope")));
  CHECK_FALSE(parse_redirect(error_reply("MOVED 99999 h:1")));
  CHECK_FALSE(parse_redirect(error_reply("MOVED 1 h")));
  CHECK_FALSE(parse_redirect(str("MOVED 1 h:1")));
}

TEST_CASE("slot_map: from CLUSTER SLOTS, lookups, a MOVED, malformed replies") {
  node_address asked{"10.0.0.9", 7000};
  auto m = slot_map::parse(array({range(0, 5460, "10.0.0.1", 7000), range(5461, 10922, "", 7001),
                                  range(10923, 16383, "10.0.0.3", 7002)}),
                           asked);
  REQUIRE(m);
  CHECK(m->masters().size() == 3);
  CHECK(m->unserved() == 0);
  CHECK(*m->owner(0) == node_address{"10.0.0.1", 7000});
  CHECK(*m->owner(5461) == node_address{"10.0.0.9", 7001});  // empty host: the node asked
  CHECK(*m->owner(16383) == node_address{"10.0.0.3", 7002});
  CHECK(m->owner_index(12000) == 2);

  m->assign(100, {"10.0.0.3", 7002});
  CHECK(*m->owner(100) == node_address{"10.0.0.3", 7002});
  CHECK(*m->owner(101) == node_address{"10.0.0.1", 7000});
  m->assign(101, {"10.0.0.4", 7003});  // a new master
  CHECK(m->masters().size() == 4);
  CHECK(m->owner_index(101) == 3);

  auto partial = slot_map::parse(array({range(0, 99, "h", 1)}), asked);
  REQUIRE(partial);
  CHECK(partial->unserved() == 16384 - 100);
  CHECK(partial->owner(100) == nullptr);
  CHECK(partial->owner_index(100) == -1);

  CHECK_FALSE(slot_map::parse(str("x"), asked));
  CHECK_FALSE(slot_map::parse(array({range(10, 5, "h", 1)}), asked));
  CHECK_FALSE(slot_map::parse(array({range(0, 16384, "h", 1)}), asked));
  CHECK_FALSE(slot_map::parse(array({range(0, 1, "h", 0)}), asked));
  CHECK_FALSE(slot_map::parse(array({array({integer(0), integer(1)})}), asked));
}

TEST_CASE("cluster_retry: what each answer leads to") {
  auto t0 = cluster_retry::clock_type::now();
  using action = cluster_retry::action;

  SUBCASE("a plain reply or a plain error completes") {
    cluster_retry r(t0 + 5s);
    CHECK(r.next({}, str("OK"), t0).what == action::complete);
    CHECK(r.next({}, error_reply("ERR wrong"), t0).what == action::complete);
    CHECK_FALSE(r.next({}, error_reply("ERR wrong"), t0).refresh);
  }
  SUBCASE("a transport error completes and asks for a refresh") {
    cluster_retry r(t0 + 5s);
    auto s = r.next(std::make_error_code(std::errc::connection_reset), reply{}, t0);
    CHECK(s.what == action::complete);
    CHECK(s.refresh);
  }
  SUBCASE("MOVED follows and refreshes, up to the limit") {
    cluster_retry r(t0 + 5s, 2);
    auto s = r.next({}, error_reply("MOVED 5 h:2"), t0);
    CHECK(s.what == action::follow_moved);
    CHECK(s.refresh);
    REQUIRE(s.to);
    CHECK(s.to->to == node_address{"h", 2});
    CHECK(r.next({}, error_reply("MOVED 5 h:3"), t0).what == action::follow_moved);
    CHECK(r.next({}, error_reply("MOVED 5 h:4"), t0).what == action::complete);
  }
  SUBCASE("ASK follows once; a second ASK in a row completes; MOVED after ASK follows") {
    cluster_retry r(t0 + 5s);
    auto s = r.next({}, error_reply("ASK 5 h:2"), t0);
    CHECK(s.what == action::follow_ask);
    CHECK_FALSE(s.refresh);
    CHECK(r.next({}, error_reply("ASK 5 h:3"), t0).what == action::complete);
    cluster_retry r2(t0 + 5s);
    CHECK(r2.next({}, error_reply("ASK 5 h:2"), t0).what == action::follow_ask);
    CHECK(r2.next({}, error_reply("MOVED 5 h:2"), t0).what == action::follow_moved);
  }
  SUBCASE("TRYAGAIN and CLUSTERDOWN back off within the deadline") {
    cluster_retry r(t0 + 1s);
    auto s = r.next({}, error_reply("TRYAGAIN Multiple keys request during rehashing"), t0);
    CHECK(s.what == action::wait_and_resend);
    CHECK(s.wait == 20ms);
    CHECK_FALSE(s.refresh);
    auto d = r.next({}, error_reply("CLUSTERDOWN The cluster is down"), t0);
    CHECK(d.what == action::wait_and_resend);
    CHECK(d.wait == 40ms);
    CHECK(d.refresh);
    for (int i = 0; i < 4; ++i) r.next({}, error_reply("TRYAGAIN x"), t0);
    CHECK(r.next({}, error_reply("TRYAGAIN x"), t0).wait == 500ms);
    // Past the deadline (or too close to it for one more wait): the caller gets the error.
    CHECK(r.next({}, error_reply("TRYAGAIN x"), t0 + 900ms).what == action::complete);
    CHECK(r.next({}, error_reply("MOVED 1 h:1"), t0 + 2s).what == action::complete);
  }
}

}  // namespace test_cluster_routing_unit
