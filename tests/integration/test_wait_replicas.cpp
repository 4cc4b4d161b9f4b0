// --wait-replicas, the pieces the worker uses: claim.lua in publish mode 'n' writes the inbox
// and publishes nothing (the frame render_frame rebuilds is the inbox's); WAIT routed to the
// node of the user's slot (connection::exec_at / exec_all_at) counts the replica acks on a
// Redis Cluster and times out on a single Redis without replicas.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/lua/claim.hpp"
#include "core/message.hpp"
#include "core/queue_api.hpp"
#include "core/redis/hash_slot.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "worker/claim_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_wait_replicas_integration {

namespace asio = boost::asio;
namespace lua = pushonce::lua;
namespace redis = pushonce::redis;
using pushonce::bus_message;
using pushonce::test::bus_msg;
using pushonce::test::claim_opts;
using pushonce::test::cluster_fixture;
using pushonce::test::cmd;
using pushonce::test::outcomes_of;
using pushonce::test::received;
using pushonce::test::redis_fixture;
using pushonce::test::sync_redis;

namespace {

long long wait_calls(std::uint16_t port) {
  sync_redis r(port);
  auto info = r.text({"INFO", "commandstats"});
  auto at = info.find("cmdstat_wait:calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + 19));
}

}  // namespace

TEST_CASE("wait replicas: a delivery is published whatever fails after its claim") {
  redis_fixture fx;
  received frames;
  auto sub = fx.subscriber(frames);
  const auto a = bus_msg("4096", "ava", R"({"n":1})");
  const auto b = bus_msg("8192", "bob", R"({"n":2})");
  const auto c = bus_msg("12288", "cid", R"({"n":3})");
  const std::string ch_a = fx.k.user_channel("ava"), ch_c = fx.k.user_channel("cid");
  // B's meta key holds another type: the claim of [A, B] fails at B, after A's delivery.
  sync_redis(fx.server.port()).cmd({"SET", fx.k.user("bob", "meta"), "broken"});
  pushonce::worker::claim_options o;
  o.wait_replicas = 1;  // no replica here: each WAIT times out, the frames still go out
  o.wait_timeout = std::chrono::milliseconds(10);
  pushonce::worker::claim_client claims(fx.conn, fx.k, o);
  fx.run([&]() -> asio::awaitable<void> {
    for (std::string ch : {ch_a, ch_c}) {
      CO_LET(auto sec, sub->subscribe(std::move(ch)));
      REQUIRE_FALSE(sec);
    }
    std::vector<bus_message> ab{a, b};
    CO_LET(auto r, claims.claim(ab, "w1"));
    CHECK_FALSE(r);  // the call failed at B
    // A is in its inbox: a session connected to A must see it live.
    auto range = cmd({"XRANGE", fx.k.user("ava", "inbox"), "-", "+"});
    CO_LET(auto inbox, fx.conn->exec(std::move(range)));
    CHECK(inbox.value.elements.size() == 1);
    CO_LET(bool seen, pushonce::test::co_wait_until([&] { return frames.count(ch_a) > 0; },
                                                    std::chrono::milliseconds(2000)));
    CHECK(seen);
    CHECK(frames.payloads(ch_a) == std::vector<std::string>{pushonce::render_frame(a, 1)});

    // A worker that dies between its claim and its publish: claim.lua 'n' ran, no PUBLISH
    // followed. The sweeper's re-drive of the message publishes it (once its lease is over
    // or at once: the record says delivered, not yet published).
    auto s = claim_opts("w2");
    s.publish = lua::publish_mode::none;
    std::vector<bus_message> one{c};
    CO_LET(auto died, pushonce::test::claim(*fx.conn, fx.k, s, one));
    CHECK(outcomes_of(died, 1) == std::vector<std::string>{"delivered 1"});
    CO_LET(auto redriven, claims.claim(one, "w3"));
    REQUIRE(redriven);
    CO_LET(bool heard, pushonce::test::co_wait_until([&] { return frames.count(ch_c) > 0; },
                                                     std::chrono::milliseconds(2000)));
    CHECK(heard);
    CHECK(frames.payloads(ch_c) == std::vector<std::string>{pushonce::render_frame(c, 1)});
    // Published: a later re-drive finds it done and publishes nothing more.
    CO_LET(auto again, claims.claim(one, "w4"));
    REQUIRE(again);
    CHECK(again.value().front().state == lua::claim_state::done);
    CO_DO(pushonce::test::co_observe_quiet(std::chrono::milliseconds(100), "a second frame"));
    CHECK(frames.count(ch_c) == 1);
  });
}

TEST_CASE(
    "wait replicas: claim.lua 'n' delivers without publishing; WAIT without replicas times out") {
  redis_fixture fx;
  received frames;
  auto sub = fx.subscriber(frames);
  const std::string user = "wendy";
  const std::string channel = fx.k.user_channel(user);
  const auto m1 = bus_msg("4096", user, R"({"n":1})");
  const auto m2 = bus_msg("8192", user, R"({"n":2})");
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = channel;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);

    auto s = claim_opts("w1");
    s.publish = lua::publish_mode::none;
    std::vector<bus_message> batch{m1};
    CO_LET(auto r, pushonce::test::claim(*fx.conn, fx.k, s, batch));
    CHECK(outcomes_of(r, 1) == std::vector<std::string>{"delivered 1"});
    // the inbox has the frame the caller will publish
    auto range = cmd({"XRANGE", fx.k.user(user, "inbox"), "-", "+"});
    CO_LET(auto inbox, fx.conn->exec(std::move(range)));
    REQUIRE(inbox.value.elements.size() == 1);
    CHECK(inbox.value.elements[0].at(1).at(1).str == pushonce::render_frame(m1, 1));

    // No replica: WAIT 1 answers 0 after its timeout (the worker counts it, then publishes).
    auto t0 = std::chrono::steady_clock::now();
    auto wait = cmd({"WAIT", "1", "150"});
    CO_LET(auto w, fx.conn->exec_at(fx.k.claim(user, m1.id), std::move(wait)));
    auto took = std::chrono::steady_clock::now() - t0;
    REQUIRE(w.ok());
    CHECK(w.value.integer == 0);
    CHECK(took >= std::chrono::milliseconds(140));
    // WAIT 0: no replica wanted, answered at once
    std::vector<std::string> rk{fx.k.claim(user, m1.id)};
    std::vector<redis::command> w0{cmd({"WAIT", "0", "1000"})};
    CO_LET(auto ws, fx.conn->exec_all_at(std::move(rk), std::move(w0)));
    REQUIRE(ws.size() == 1);
    CHECK(ws[0].ok());

    // Mode 'p' (today's) publishes in the script.
    s.publish = lua::publish_mode::classic;
    std::vector<bus_message> batch2{m2};
    CO_LET(auto r2, pushonce::test::claim(*fx.conn, fx.k, s, batch2));
    CHECK(outcomes_of(r2, 1) == std::vector<std::string>{"delivered 2"});
    CO_DO(pushonce::test::co_observe_quiet(std::chrono::milliseconds(200),
                                           "a frame other than the classic one"));
    CHECK(frames.payloads(channel) == std::vector<std::string>{pushonce::render_frame(m2, 2)});
  });
}

TEST_CASE("wait replicas: on a cluster, WAIT goes to the user's master and counts its replica" *
          doctest::test_suite("cluster")) {
  cluster_fixture fx;
  // one user per master
  std::vector<std::string> users;
  std::vector<std::uint16_t> owners;
  for (auto port : fx.cluster.masters()) {
    for (int i = 0;; ++i) {
      std::string u = "wu" + std::to_string(port) + "-" + std::to_string(i);
      if (fx.cluster.master_of(redis::hash_slot(fx.k.user(u, ""))) == port) {
        users.push_back(u);
        owners.push_back(port);
        break;
      }
    }
  }
  REQUIRE(users.size() == 3);
  std::vector<long long> before;
  for (auto p : owners) before.push_back(wait_calls(p));

  fx.run([&]() -> asio::awaitable<void> {
    auto s = claim_opts("w1");
    s.publish = lua::publish_mode::none;
    // The first user's delivery, then WAIT on its master only.
    std::vector<bus_message> one{bus_msg("4096", users[0])};
    CO_LET(auto r, pushonce::test::claim(*fx.conn, fx.k, s, one));
    CHECK(outcomes_of(r, 1) == std::vector<std::string>{"delivered 1"});
    auto wait = cmd({"WAIT", "1", "5000"});
    CO_LET(auto w, fx.conn->exec_at(fx.k.claim(users[0], "4096"), std::move(wait)));
    REQUIRE(w.ok());
    CHECK(w.value.integer == 1);  // the replica acknowledged the delivery
  });
  CHECK(wait_calls(owners[0]) == before[0] + 1);
  CHECK(wait_calls(owners[1]) == before[1]);
  CHECK(wait_calls(owners[2]) == before[2]);

  fx.run([&]() -> asio::awaitable<void> {
    // Every master at once (what the worker does for a batch that spans slots).
    auto s = claim_opts("w2");
    s.publish = lua::publish_mode::none;
    std::vector<std::string> route_keys;
    std::vector<redis::command> waits;
    for (std::size_t i = 0; i < users.size(); ++i) {
      std::vector<bus_message> one{bus_msg("8192", users[i])};
      CO_LET(auto r, pushonce::test::claim(*fx.conn, fx.k, s, one));
      CHECK(outcomes_of(r, 1).front().starts_with("delivered"));
      route_keys.push_back(fx.k.claim(users[i], "8192"));
      waits.push_back(cmd({"WAIT", "1", "5000"}));
    }
    CO_LET(auto ws, fx.conn->exec_all_at(std::move(route_keys), std::move(waits)));
    REQUIRE(ws.size() == 3);
    for (auto& a : ws) {
      REQUIRE(a.ok());
      CHECK(a.value.integer == 1);
    }
  });
  CHECK(wait_calls(owners[0]) == before[0] + 2);
  CHECK(wait_calls(owners[1]) == before[1] + 1);
  CHECK(wait_calls(owners[2]) == before[2] + 1);
}

TEST_CASE("wait replicas: a queue's batch is heard only once a replica of its master holds it") {
  redis_fixture fx;
  pushonce::queue_api api(fx.conn, fx.k);
  received bus;
  auto sub = fx.subscriber(bus);
  const std::string q = "default";
  const std::string ch = fx.k.bus_channel();
  std::unique_ptr<pushonce::test::redis_server> replica;
  fx.run([&]() -> asio::awaitable<void> {
    std::string c = ch;
    CO_LET(auto sec, sub->subscribe(std::move(c)));
    REQUIRE_FALSE(sec);
    std::vector<std::string> queues{q};
    CO_LET(auto reg, api.register_queues(std::move(queues)));
    REQUIRE(reg.has_value());
    CO_LET(auto src, api.source_index(q));
    const long long source = src.value();
    api.set_wait_replicas(1, std::chrono::milliseconds(100));
    // No replica: a new queue's source index is not handed out (a failover could lose it
    // and give it to another queue).
    CO_LET(auto unreplicated, api.source_index("other"));
    REQUIRE_FALSE(unreplicated.has_value());
    CHECK(unreplicated.error().code == pushonce::errc::redis_unavailable);
    auto one = [&](std::string user, std::string res) -> asio::awaitable<std::string> {
      std::vector<std::string> rs{std::move(res)};
      CO_LET(auto add, api.add_resources(q, rs, ""));
      REQUIRE(add.has_value());
      CO_LET(auto j, api.join(q, std::move(user)));
      REQUIRE(j.has_value());
      CO_LET(auto a, api.assign_batch(q, source, 0, 0, 10));
      REQUIRE(a.has_value());
      REQUIRE(a.value().size() == 1);
      co_return a.value()[0].id;
    };

    // No replica: the batch is written (the outbox has it, for the sweeper) but not heard.
    CO_LET(auto first, one("ann", "r1"));
    CO_DO(pushonce::test::co_observe_quiet(std::chrono::milliseconds(300), "a bus message"));
    CHECK(bus.count(ch) == 0);
    CHECK(api.wait_replicas_short() == 1);
    auto xlen = cmd({"XLEN", fx.k.queue(q, "outbox")});
    CO_LET(auto x, fx.conn->exec(std::move(xlen)));
    CHECK(x.value.integer == 1);

    // A replica joins: the next batch is heard, after its WAIT.
    replica = std::make_unique<pushonce::test::redis_server>(pushonce::test::redis_server_options{
        .extra_args = {"--replicaof", "127.0.0.1", std::to_string(fx.server.port())}});
    auto synced = [&] {
      sync_redis r(fx.server.port());
      return r.integer({"WAIT", "1", "100"}) == 1;
    };
    CO_LET(bool ready, pushonce::test::co_wait_until(synced, std::chrono::milliseconds(10000)));
    REQUIRE(ready);
    // A WAIT long enough for a loaded box (the replica acks at once on an idle one).
    api.set_wait_replicas(1, std::chrono::milliseconds(5000));
    CO_LET(auto second, one("ben", "r2"));
    CO_LET(bool heard, pushonce::test::co_wait_until([&] { return bus.count(ch) > 0; },
                                                     std::chrono::milliseconds(2000)));
    CHECK(heard);
    auto payloads = bus.payloads(ch);
    REQUIRE(payloads.size() == 1);
    CHECK(payloads[0].find("\"id\":\"" + second + "\"") != std::string::npos);
    CHECK(payloads[0].find(first) == std::string::npos);
    CHECK(api.wait_replicas_short() == 1);
  });
}

}  // namespace test_wait_replicas_integration
