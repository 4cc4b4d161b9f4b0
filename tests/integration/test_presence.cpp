// Presence and abandonment against a real redis-server: the presence scripts
// (lua/presence_*.lua, built by core/lua/presence), abandon.lua with the leader's
// abandon_plan driving the sweep as leader/presence_keeper does, and dead-gateway folding.
#include "core/lua/presence.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/queue_api.hpp"
#include "core/redis/scripts.hpp"
#include "leader/abandon_plan.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_presence_integration {

namespace asio = boost::asio;
namespace lua = pushonce::lua;
using namespace std::chrono_literals;
using pushonce::queue_api;
using pushonce::redis::command;
using pushonce::test::cmd;
using pushonce::test::redis_fixture;

namespace {

asio::awaitable<long long> integer(pushonce::redis::connection& c, command words) {
  CO_LET(auto r, c.exec(std::move(words)));
  co_return r.value.as_int().value_or(-1);
}

asio::awaitable<bool> is_absent(redis_fixture& fx, std::string user) {
  CO_LET(auto r, fx.conn->exec(cmd({"ZSCORE", lua::presence_key(fx.k, "absent"), user})));
  co_return !r.value.is_nil();
}

}  // namespace

TEST_CASE("presence: open and close count sessions over gateways; the last close is absent") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    auto& c = *fx.conn;
    // Two tabs on two gateways.
    CO_LET(auto o1, lua::run_script(c, lua::presence_open_for(fx.k, "ann", "g1~a")));
    CHECK(o1.value.integer == 1);
    CO_LET(auto o2, lua::run_script(c, lua::presence_open_for(fx.k, "ann", "g2~b")));
    CHECK(o2.value.integer == 2);
    // One tab closes: still present.
    CO_LET(auto c1, lua::run_script(c, lua::presence_close_for(fx.k, "ann", "g1~a")));
    CHECK(c1.value.integer == 1);
    CO_LET(bool absent1, is_absent(fx, "ann"));
    CHECK_FALSE(absent1);
    // A close already counted (a duplicate, or after a fold) changes nothing.
    CO_LET(auto again, lua::run_script(c, lua::presence_close_for(fx.k, "ann", "g1~a")));
    CHECK(again.value.integer == -1);
    // The last one closes: absent since now, nothing left in the counts.
    CO_LET(auto c2, lua::run_script(c, lua::presence_close_for(fx.k, "ann", "g2~b")));
    CHECK(c2.value.integer == 0);
    CO_LET(bool absent2, is_absent(fx, "ann"));
    CHECK(absent2);
    CO_LET(long long counted, integer(c, cmd({"HLEN", lua::presence_key(fx.k, "count")})));
    CHECK(counted == 0);
    // A reconnect ends the absence.
    CO_LET(auto o3, lua::run_script(c, lua::presence_open_for(fx.k, "ann", "g1~a")));
    CHECK(o3.value.integer == 1);
    CO_LET(bool absent3, is_absent(fx, "ann"));
    CHECK_FALSE(absent3);
    // An admin join of a user with a session does not make it absent; without one, it does.
    CO_LET(auto j1, lua::run_script(c, lua::presence_joined_for(fx.k, "ann")));
    CHECK(j1.value.integer == 0);
    CO_LET(auto j2, lua::run_script(c, lua::presence_joined_for(fx.k, "bob")));
    CHECK(j2.value.integer == 1);
    CO_LET(bool bob_absent, is_absent(fx, "bob"));
    CHECK(bob_absent);
    // Both gateways are registered instances.
    CO_LET(long long gws, integer(c, cmd({"ZCARD", lua::presence_key(fx.k, "gws")})));
    CHECK(gws == 2);
  });
}

TEST_CASE("presence: a dead gateway is folded in batches; its users are absent, others stay") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    auto& c = *fx.conn;
    // 250 users on the dying gateway; "both" also has a tab on a live one.
    for (int i = 0; i < 250; ++i) {
      auto u = "u" + std::to_string(i);
      CO_DO(lua::run_script(c, lua::presence_open_for(fx.k, u, "dead~1")));
    }
    CO_DO(lua::run_script(c, lua::presence_open_for(fx.k, "u0", "dead~1")));
    CO_DO(lua::run_script(c, lua::presence_open_for(fx.k, "both", "dead~1")));
    CO_DO(lua::run_script(c, lua::presence_open_for(fx.k, "both", "live~2")));
    std::string cursor = "0";
    long long folded = 0;
    bool done = false;
    for (int round = 0; round < 100 && !done; ++round) {
      CO_LET(auto r, lua::run_script(c, lua::presence_fold_for(fx.k, "dead~1", cursor, 50)));
      auto f = lua::parse_fold_reply(r.value);
      REQUIRE(f);
      folded += f->folded;
      cursor = f->cursor;
      done = f->done;
    }
    CHECK(done);
    CHECK(folded == 251);
    CO_LET(long long absent, integer(c, cmd({"ZCARD", lua::presence_key(fx.k, "absent")})));
    CHECK(absent == 250);  // u0 (two sessions there) included, "both" not
    CO_LET(bool both, is_absent(fx, "both"));
    CHECK_FALSE(both);
    CO_LET(auto left, fx.conn->exec(cmd({"HGET", lua::presence_key(fx.k, "count"), "both"})));
    CHECK(left.value.str == "1");
    CO_LET(long long gone, integer(c, cmd({"EXISTS", lua::presence_key(fx.k, "gw:dead~1")})));
    CHECK(gone == 0);
    CO_LET(long long gws, integer(c, cmd({"ZCARD", lua::presence_key(fx.k, "gws")})));
    CHECK(gws == 1);
    // The instance was alive after all (a pause): it counts its sessions again, once.
    std::vector<std::pair<std::string, std::size_t>> held{{"both", 1}, {"u1", 1}};
    for (int twice = 0; twice < 2; ++twice) {
      CO_LET(auto r, lua::run_script(c, lua::presence_reclaim_for(fx.k, "dead~1", held)));
      CHECK(r.value.integer == (twice == 0 ? 2 : 0));
    }
    CO_LET(auto both2, fx.conn->exec(cmd({"HGET", lua::presence_key(fx.k, "count"), "both"})));
    CHECK(both2.value.str == "2");
    CO_LET(bool u1_absent, is_absent(fx, "u1"));
    CHECK_FALSE(u1_absent);
    CO_LET(long long gws2, integer(c, cmd({"ZCARD", lua::presence_key(fx.k, "gws")})));
    CHECK(gws2 == 2);
    // Its sessions close normally afterwards.
    CO_LET(auto u1_close, lua::run_script(c, lua::presence_close_for(fx.k, "u1", "dead~1")));
    CHECK(u1_close.value.integer == 0);
    CO_LET(auto both_close, lua::run_script(c, lua::presence_close_for(fx.k, "both", "dead~1")));
    CHECK(both_close.value.integer == 1);
    // A close from the dead instance arriving late counts nothing twice.
    CO_LET(auto late, lua::run_script(c, lua::presence_close_for(fx.k, "both", "dead~1")));
    CHECK(late.value.integer == -1);
  });
}

TEST_CASE("abandonment: the sweep removes ghosts (waiting and assigned) and keeps the present") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    auto& c = *fx.conn;
    std::vector<std::string> queues{q};
    CO_DO(api.register_queues(std::move(queues)));
    // ghost1 and ghost2 had sessions and closed them; present has one open; cli never
    // had one (an admin join: absent from the join).
    for (std::string u : {"ghost1", "present", "ghost2", "cli", "holder"}) CO_DO(api.join(q, u));
    for (std::string u : {"ghost1", "present", "ghost2", "holder"})
      CO_DO(lua::run_script(c, lua::presence_open_for(fx.k, u, "g~1")));
    for (std::string u : {"ghost1", "ghost2"})
      CO_DO(lua::run_script(c, lua::presence_close_for(fx.k, u, "g~1")));
    CO_DO(lua::run_script(c, lua::presence_joined_for(fx.k, "cli")));
    // "holder" is assigned and has not accepted (no accept timeout: pending at +inf), then
    // leaves. It is first in line: take it out of the waiting list by assigning.
    std::vector<std::string> ids{"r1"};
    CO_DO(api.add_resources(q, std::move(ids), ""));
    CO_LET(auto src, api.source_index(q));
    // Assign one: ghost1 is first in line. Make holder first instead.
    CO_DO(api.leave(q, "ghost1"));
    CO_DO(api.leave(q, "present"));
    CO_DO(api.leave(q, "ghost2"));
    CO_DO(api.leave(q, "cli"));
    CO_LET(auto a, api.assign_one(q, src.value(), 0, 0));
    REQUIRE(a.has_value());
    REQUIRE(a.value().has_value());
    CHECK(a.value()->user == "holder");
    for (std::string u : {"ghost1", "present", "ghost2", "cli"}) CO_DO(api.join(q, u));
    CO_DO(lua::run_script(c, lua::presence_close_for(fx.k, "holder", "g~1")));
    CO_LET(auto pend, fx.conn->exec(cmd({"ZSCORE", fx.k.queue(q, "pending"), "holder"})));
    CHECK(pend.value.str == "inf");

    // The sweep as the leader runs it, with abandon_after 0.2 s, after 0.3 s.
    CO_DO(pushonce::test::co_let_lapse(300ms, "the 0.2 s abandon_after"));
    pushonce::leader::abandon_plan plan(2);  // small batches: several rounds
    CO_LET(auto t, fx.conn->exec(cmd({"TIME"})));
    long long now = t.value.at(0).as_int().value() * 1000 + t.value.at(1).as_int().value() / 1000;
    std::vector<std::string> abandoned;
    for (int round = 0; round < 10; ++round) {
      auto range = plan.next_range(q, 200ms, now);
      if (!range) break;
      CO_LET(auto read,
             fx.conn->exec(lua::absent_range_command(fx.k, range->min, range->max, range->limit)));
      auto got = lua::parse_absent_range(read.value);
      REQUIRE(got);
      auto users = plan.on_read(q, *range, *got);
      if (!users.empty()) {
        CO_LET(auto r, lua::run_script(c, lua::abandon_for(fx.k, q, 0, users)));
        REQUIRE(r.ok());
      }
      abandoned.insert(abandoned.end(), users.begin(), users.end());
      if (!plan.more(q)) break;
    }
    CO_LET(auto listing, api.list(q, 10));
    CHECK(listing.value().users == std::vector<std::string>{"present"});
    CO_LET(auto pos, api.position(q, "ghost1"));
    CHECK(pos.error().code == pushonce::errc::not_queued);
    CO_LET(auto stats, fx.conn->exec(cmd({"HGETALL", fx.k.queue(q, "stats")})));
    CHECK(stats.value.field("abandoned").str == "3");
    CHECK(stats.value.field("abandoned_assignments").str == "1");
    // The holder's deadline is now: expire.lua ends it and frees the resource.
    CO_LET(auto ex, api.expire_batch(q, src.value(), 0, 10));
    REQUIRE(ex.has_value());
    REQUIRE(ex.value().size() == 1);
    CHECK(ex.value()[0].user == "holder");
    CO_LET(auto counts, api.resource_counts(q));
    CHECK(counts.value().first == 1);
    // Everything read is dealt with: the drop forgets it; a fresh absence stays.
    CO_DO(lua::run_script(c, lua::presence_close_for(fx.k, "present", "g~1")));
    std::map<std::string, std::optional<std::chrono::milliseconds>> afters{{q, 200ms}};
    auto horizon = plan.drop_horizon(afters, now);
    REQUIRE(horizon);
    CO_LET(auto dropped, lua::run_script(c, lua::presence_drop_for(fx.k, *horizon, 100)));
    CHECK(dropped.value.integer == 4);
    CO_LET(bool still, is_absent(fx, "present"));
    CHECK(still);
    // Running abandon again for a user no longer there does nothing.
    std::vector<std::string> again{"ghost1", "holder"};
    CO_LET(auto r2, lua::run_script(c, lua::abandon_for(fx.k, q, 0, again)));
    CHECK(lua::parse_abandon_reply(r2.value)->removed == 0);
    CHECK(lua::parse_abandon_reply(r2.value)->ended == 0);
  });
}

TEST_CASE("abandonment: abandon.lua is fenced like expire.lua") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    CO_DO(fx.conn->exec(cmd({"SET", fx.k.queue("q", "fence"), "7"})));
    std::vector<std::string> users{"x"};
    CO_LET(auto r, lua::run_script(*fx.conn, lua::abandon_for(fx.k, "q", 6, users)));
    CHECK(r.value.error_code() == "fenced");
    CO_LET(auto ok, lua::run_script(*fx.conn, lua::abandon_for(fx.k, "q", 7, users)));
    CHECK(ok.ok());
  });
}

TEST_CASE("abandonment: a pre-queued ghost leaves the pre-queue too") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{q};
    CO_DO(api.register_queues(std::move(queues)));
    const auto later = std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch() + std::chrono::hours(1))
            .count());
    CO_DO(fx.conn->exec(
        cmd({"HSET", fx.k.queue(q, "settings"), "state", "prequeue", "opens_at", later})));
    CO_LET(auto j, api.join(q, "early"));
    REQUIRE(j.has_value());
    CHECK(j.value().opens_at.has_value());
    std::vector<std::string> users{"early"};
    CO_LET(auto r, lua::run_script(*fx.conn, lua::abandon_for(fx.k, q, 0, users)));
    REQUIRE(r.ok());
    CHECK(lua::parse_abandon_reply(r.value)->removed == 1);
    CO_LET(long long left, integer(*fx.conn, cmd({"ZCARD", fx.k.queue(q, "prequeue")})));
    CHECK(left == 0);
    CO_LET(auto stats, fx.conn->exec(cmd({"HGET", fx.k.queue(q, "stats"), "abandoned"})));
    CHECK(stats.value.str == "1");
  });
}

}  // namespace test_presence_integration
