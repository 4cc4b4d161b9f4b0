// The calls core/lua/assign (assign, assign_plan, expire) and core/lua/positions build (KEYS
// and ARGV as the scripts read them, every key in the queue's slot) and the reply parsers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/lua/assign.hpp"
#include "core/lua/positions.hpp"
#include "core/redis/hash_slot.hpp"

namespace {

using namespace pushonce;
using namespace std::chrono_literals;

redis::reply assign_test_string(std::string s) {
  redis::reply r;
  r.kind = redis::reply::type::string;
  r.str = std::move(s);
  return r;
}

redis::reply assign_test_int(long long n) {
  redis::reply r;
  r.kind = redis::reply::type::integer;
  r.integer = n;
  return r;
}

redis::reply assign_test_array(std::vector<redis::reply> items) {
  redis::reply r;
  r.kind = redis::reply::type::array;
  r.elements = std::move(items);
  return r;
}

bool one_slot(const std::vector<std::string>& ks) {
  for (const auto& key : ks)
    if (redis::hash_slot(key) != redis::hash_slot(ks.front())) return false;
  return true;
}

const lua::assign_settings assign_test_settings{.source = 7,
                                                .fencing_token = 3,
                                                .accept_timeout_ms = 30000,
                                                .outbox_retention = 60000ms,
                                                .max = 50,
                                                .admission_record = 660000ms};

}  // namespace

TEST_CASE("lua assign: without a plan, nine arguments; every key in the queue's slot") {
  keys k("ns");
  auto in = lua::assign_for(k, "q1", assign_test_settings);
  auto ks = lua::script_keys(in);
  CHECK(ks.size() == 16);
  CHECK(ks.front() == k.queue("q1", "waiting"));
  CHECK(ks.back() == k.queue("q1", "leases"));
  CHECK(one_slot(ks));
  CHECK(lua::script_args(in) == std::vector<std::string>{"q1", "7", "3", "30000", "60000", "ns:bus",
                                                         "ns:leader:wake", "50", "660000"});
  // The leader's highest sequence number used: an empty plan count, then the least base.
  auto s = assign_test_settings;
  s.least_seq = 77;
  CHECK(lua::script_args(lua::assign_for(k, "q1", s)) ==
        std::vector<std::string>{"q1", "7", "3", "30000", "60000", "ns:bus", "ns:leader:wake", "50",
                                 "660000", "", "77"});
}

TEST_CASE("lua assign: with a plan, its count, seq and a user, resource, token per pair") {
  keys k("ns");
  admission::assign_plan plan{.seq = "41", .stale = 0, .pairs = {{"ada", "r1"}, {"bob", "r2"}}};
  auto in = lua::planned_assign_for(k, "q1", assign_test_settings, plan, {"t1", "t2"});
  auto args = lua::script_args(in);
  REQUIRE(args.size() == 11 + 6);
  CHECK(std::vector<std::string>(args.begin() + 9, args.end()) ==
        std::vector<std::string>{"2", "41", "ada", "r1", "t1", "bob", "r2", "t2"});
  admission::assign_plan stale_only{.seq = "7", .stale = 2, .pairs = {}};
  auto stale_args =
      lua::script_args(lua::planned_assign_for(k, "q1", assign_test_settings, stale_only, {}));
  CHECK(stale_args.size() == 11);
  CHECK(stale_args[9] == "0");
  CHECK(stale_args[10] == "7");
}

TEST_CASE("lua assign: assignments, stale and plan replies") {
  auto r = assign_test_array({assign_test_string("4103"), assign_test_string("ada"),
                              assign_test_string("r1"), assign_test_string("8199"),
                              assign_test_string("bob"), assign_test_string("r2")});
  auto a = lua::assignments_of(r, 3);
  REQUIRE(a.size() == 2);
  CHECK(a[1].id == "8199");
  CHECK(a[1].user == "bob");
  CHECK(a[1].resource == "r2");
  CHECK_FALSE(lua::assign_was_stale(r));
  CHECK(lua::assign_was_stale(assign_test_array({assign_test_string("stale")})));
  CHECK(lua::assignments_of(assign_test_array({}), 3).empty());

  auto plan =
      lua::assign_plan_of(assign_test_array({assign_test_string("41"), assign_test_int(1),
                                             assign_test_string("ada"), assign_test_string("r1")}));
  REQUIRE(plan);
  CHECK(plan->seq == "41");
  CHECK(plan->stale == 1);
  CHECK(plan->pairs.size() == 1);
  CHECK_FALSE(lua::assign_plan_of(assign_test_array({assign_test_string("41")})));
  auto plan_in = lua::assign_plan_for(keys("ns"), "q1", 20);
  CHECK(lua::script_keys(plan_in).size() == 7);
  CHECK(one_slot(lua::script_keys(plan_in)));
  CHECK(lua::script_args(plan_in) == std::vector<std::string>{"20"});
  // The least base of the ids (the leader's highest sequence number used) when it has one.
  CHECK(lua::script_args(lua::assign_plan_for(keys("ns"), "q1", 20, 77)) ==
        std::vector<std::string>{"20", "77"});
}

TEST_CASE("lua expire: its call and its four-item reply") {
  keys k("ns");
  auto in = lua::expire_for(
      k, "q1", {.source = 7, .fencing_token = 0, .outbox_retention = 60000ms, .max = 100});
  CHECK(lua::script_keys(in).size() == 11);
  CHECK(one_slot(lua::script_keys(in)));
  CHECK(lua::script_args(in) ==
        std::vector<std::string>{"q1", "7", "0", "60000", "ns:bus", "ns:leader:wake", "100"});
  auto least = lua::expire_for(
      k, "q1",
      {.source = 7, .fencing_token = 0, .outbox_retention = 60000ms, .max = 100, .least_seq = 77});
  CHECK(lua::script_args(least).back() == "77");
  auto r = assign_test_array({assign_test_string("m1"), assign_test_string("ada"),
                              assign_test_string("r1"), assign_test_string("4103")});
  auto e = lua::assignments_of(r, 4);
  REQUIRE(e.size() == 1);
  CHECK(e[0].id == "m1");
  CHECK(e[0].resource == "r1");
}

TEST_CASE("lua positions: the users are all of ARGV; the reply is a seq and a pair per user") {
  keys k("ns");
  auto in = lua::positions_for(k, "q1", {"ada", "bob"});
  CHECK(lua::script_keys(in) ==
        std::vector<std::string>{k.queue("q1", "waiting"), k.queue("q1", "events")});
  CHECK(lua::script_args(in) == std::vector<std::string>{"ada", "bob"});
  auto p = lua::positions_of(
      assign_test_array({assign_test_int(9), assign_test_int(1), assign_test_int(12),
                         assign_test_int(0), assign_test_int(0)}));
  REQUIRE(p);
  CHECK(p->seq == 9);
  REQUIRE(p->users.size() == 2);
  CHECK(p->users[0].position == 1);
  CHECK(p->users[0].ticket == 12);
  CHECK(p->users[1].position == 0);
  CHECK_FALSE(lua::positions_of(assign_test_array({assign_test_int(9), assign_test_int(1)})));
  CHECK_FALSE(lua::positions_of(assign_test_array({})));
  CHECK_FALSE(lua::positions_of(assign_test_string("x")));
}
