// Sharded Pub/Sub on a real 3-master cluster with replicas (redis::sharded_subscriber):
// SPUBLISH (and claim.lua in sharded mode) reaches an SSUBSCRIBE on the master of the
// channel's slot; after the slot is moved (the old owner pushes `sunsubscribe`) and after
// that master fails over, the channel is subscribed on the new owner, the `resubscribed`
// callback runs (with the time since when the channel was not heard: at the latest the
// kill, for a failover), and the next message arrives.
#include "core/redis/sharded_subscriber.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/lua/claim.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/integration/lua_calls.hpp"
#include "tests/support/sync_redis.hpp"
#include "worker/claim_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_sharded_pubsub_integration {

using pushonce::test::cluster_fixture;
namespace redis = pushonce::redis;
using namespace std::chrono_literals;

namespace {

struct heard {
  std::map<std::string, std::vector<std::string>> messages;  // channel -> payloads
  std::map<std::string, int> resubscribed;                   // channel -> times
  std::map<std::string, std::vector<std::chrono::steady_clock::time_point>> deaf_since;
};

// A user whose channel (and every key of the user) is in a slot of the master on `port`.
std::string user_on(cluster_fixture& fx, std::uint16_t port) {
  for (int i = 0;; ++i) {
    std::string user = "u" + std::to_string(i);
    if (fx.cluster.master_of(fx.cluster.slot_of(fx.k.user_channel(user))) == port) return user;
  }
}

// SPUBLISH through the cluster client, retried while the cluster settles (after a failover
// the client may need a moment to learn the new map). The number of receivers.
// (Coroutine parameters by value: a reference to a temporary would dangle.)
boost::asio::awaitable<long long> spublish(cluster_fixture& fx, std::string ch, std::string text) {
  long long receivers = -1;
  CO_LET(bool sent, pushonce::test::co_wait_until(
                        [&]() -> boost::asio::awaitable<bool> {
                          CO_LET(auto r, fx.conn->exec(redis::command{"SPUBLISH", ch, text}));
                          if (r.ok()) receivers = r.value.integer;
                          co_return r.ok();
                        },
                        20s, 100ms));
  co_return sent ? receivers : -1;
}

// Publishes `text` until the subscriber hears it (a receiver count of 0 means the channel
// is not subscribed on the owner yet); true when heard within the limit.
boost::asio::awaitable<bool> publish_until_heard(cluster_fixture& fx, heard& h, std::string ch,
                                                 std::string text) {
  auto until = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < until) {
    CO_LET(long long n, spublish(fx, ch, text));
    CO_LET(bool got, pushonce::test::co_wait_until(
                         [&] {
                           auto& v = h.messages[ch];
                           return std::find(v.begin(), v.end(), text) != v.end();
                         },
                         n > 0 ? 2000ms : 200ms));
    if (got) co_return true;
  }
  co_return false;
}

}  // namespace

TEST_CASE("cluster sharded pubsub: SPUBLISH and claim.lua reach the slot owner's subscriber" *
          doctest::test_suite("cluster")) {
  heard h;  // outlives the fixture, whose destructor runs the last callbacks
  cluster_fixture fx;
  auto masters = fx.cluster.masters();
  REQUIRE(masters.size() == 3);
  auto sub = redis::sharded_subscriber::create(fx.io.get_executor(), fx.options(), fx.conn,
                                               [&](const std::string& ch, std::string payload) {
                                                 h.messages[ch].push_back(std::move(payload));
                                               });
  sub->on_resubscribed([&](const std::string& ch) { ++h.resubscribed[ch]; });
  sub->start();
  // One channel on each master.
  std::vector<std::string> users, chans;
  for (auto port : masters) {
    users.push_back(user_on(fx, port));
    chans.push_back(fx.k.user_channel(users.back()));
  }
  fx.run([&]() -> boost::asio::awaitable<void> {
    for (auto& ch : chans) {
      CO_LET(auto ec, sub->subscribe(ch));
      CHECK_MESSAGE(!ec, ec.message());
    }
    for (auto& ch : chans) {
      CO_LET(long long n, spublish(fx, ch, "hello " + ch));
      CHECK(n == 1);  // exactly one receiver: this subscriber, on the slot's master
    }
    CO_LET(bool all, pushonce::test::co_wait_until(
                         [&] {
                           for (auto& ch : chans)
                             if (h.messages[ch].size() != 1) return false;
                           return true;
                         },
                         3000ms));
    CHECK(all);
    for (auto& ch : chans) {
      REQUIRE(h.messages[ch].size() == 1);
      CHECK(h.messages[ch][0] == "hello " + ch);
    }

    // claim.lua in sharded mode SPUBLISHes the delivered frame on the user's channel.
    auto s = pushonce::test::claim_opts("w1");
    s.publish = pushonce::lua::publish_mode::sharded;
    auto m = pushonce::test::bus_msg("4096", users[1]);
    CO_LET(auto r, pushonce::test::claim_one(*fx.conn, fx.k, s, m));
    REQUIRE(r.ok());
    CO_LET(bool framed,
           pushonce::test::co_wait_until([&] { return h.messages[chans[1]].size() == 2; }, 3000ms));
    REQUIRE(framed);
    CHECK(h.messages[chans[1]][1].find(R"("id":"4096","offset":1)") != std::string::npos);
    // Unsubscribed: a later SPUBLISH has no receiver.
    sub->unsubscribe(chans[2]);
    CO_LET(bool gone, pushonce::test::co_wait_until(
                          [&] {
                            pushonce::test::sync_redis r(masters[2]);
                            return r.integer({"PUBSUB", "SHARDNUMSUB", chans[2]}) == 0;
                          },
                          3000ms));
    CHECK(gone);
  });
  CHECK(h.resubscribed.empty());  // nothing moved
  sub->stop();
}

TEST_CASE("cluster --wait-replicas: a slot's call fails, the other slot's delivery is published" *
          doctest::test_suite("cluster")) {
  heard h;
  cluster_fixture fx;
  auto masters = fx.cluster.masters();
  REQUIRE(masters.size() == 3);
  auto sub = redis::sharded_subscriber::create(fx.io.get_executor(), fx.options(), fx.conn,
                                               [&](const std::string& ch, std::string payload) {
                                                 h.messages[ch].push_back(std::move(payload));
                                               });
  sub->start();
  const auto a = user_on(fx, masters[0]), b = user_on(fx, masters[1]);
  const auto ch_a = fx.k.user_channel(a);
  // B's meta key holds another type: B's slot's claim.lua call fails, A's succeeds.
  pushonce::test::sync_redis(masters[1]).cmd({"SET", fx.k.user(b, "meta"), "broken"});
  pushonce::worker::claim_options o;
  o.wait_replicas = 1;
  o.wait_timeout = 2000ms;
  pushonce::worker::claim_client claims(fx.conn, fx.k, o);
  fx.run([&]() -> boost::asio::awaitable<void> {
    CO_LET(auto ec, sub->subscribe(ch_a));
    REQUIRE_FALSE(ec);
    std::vector<pushonce::bus_message> batch{pushonce::test::bus_msg("4096", a),
                                             pushonce::test::bus_msg("8192", b)};
    CO_LET(auto r, claims.claim(batch, "w1"));
    CHECK_FALSE(r);  // B's slot failed
    CO_LET(bool framed,
           pushonce::test::co_wait_until([&] { return h.messages[ch_a].size() == 1; }, 3000ms));
    CHECK(framed);
    if (framed) CHECK(h.messages[ch_a][0] == pushonce::render_frame(batch[0], 1));
    // The record is delivered now: a re-drive publishes nothing more.
    std::vector<pushonce::bus_message> one{batch[0]};
    CO_LET(auto again, claims.claim(one, "w2"));
    REQUIRE(again);
    CHECK(again.value().front().state == pushonce::lua::claim_state::done);
    CHECK_FALSE(again.value().front().frame_pending);
  });
  sub->stop();
}

TEST_CASE("cluster sharded pubsub: a moved slot, then a failover: resubscribed on the new owner" *
          doctest::test_suite("cluster")) {
  heard h;
  cluster_fixture fx;
  auto masters = fx.cluster.masters();
  auto sub = redis::sharded_subscriber::create(fx.io.get_executor(), fx.options(), fx.conn,
                                               [&](const std::string& ch, std::string payload) {
                                                 h.messages[ch].push_back(std::move(payload));
                                               });
  sub->on_resubscribed([&](const std::string& ch, std::chrono::steady_clock::time_point since) {
    ++h.resubscribed[ch];
    h.deaf_since[ch].push_back(since);
  });
  sub->start();
  auto user = user_on(fx, masters[0]);
  auto ch = fx.k.user_channel(user);
  auto other = fx.k.user_channel(user_on(fx, masters[1]));  // stays where it is
  unsigned slot = fx.cluster.slot_of(ch);
  fx.run([&]() -> boost::asio::awaitable<void> {
    CO_LET(auto ec, sub->subscribe(ch));
    CHECK(!ec);
    CO_LET(auto ec2, sub->subscribe(other));
    CHECK(!ec2);
    CO_LET(bool first, publish_until_heard(fx, h, ch, "before the move"));
    CHECK(first);
  });

  // The slot moves to the third master: the old owner pushes `sunsubscribe`.
  const auto before_move = std::chrono::steady_clock::now();
  fx.cluster.move_slot(slot, masters[2]);
  fx.run([&]() -> boost::asio::awaitable<void> {
    CO_LET(bool moved, pushonce::test::co_wait_until([&] { return h.resubscribed[ch] == 1; }, 10s));
    REQUIRE(moved);
    // Not heard since the push, or since the map read before the move (read every 5 s).
    CHECK(h.deaf_since[ch].at(0) > before_move - 6s);
    CHECK(h.deaf_since[ch].at(0) <= std::chrono::steady_clock::now());
    CO_LET(long long n, spublish(fx, ch, "after the move"));
    CHECK(n == 1);  // the subscriber is on the new owner already
    CO_LET(bool got, pushonce::test::co_wait_until(
                         [&] { return h.messages[ch].back() == "after the move"; }, 3000ms));
    CHECK(got);
    CHECK(h.resubscribed.count(other) == 0);
  });

  // The new owner dies; its replica is promoted: the channel follows.
  const auto killed = std::chrono::steady_clock::now();
  auto promoted = fx.cluster.fail_master_of(slot);
  CHECK(promoted != masters[2]);
  fx.run(
      [&]() -> boost::asio::awaitable<void> {
        CO_LET(bool back,
               pushonce::test::co_wait_until([&] { return h.resubscribed[ch] >= 2; }, 20s));
        REQUIRE(back);
        // Not heard since the last read on the killed master's connection: before the kill,
        // although the channel moved only once the replica was promoted, seconds later.
        CHECK(h.deaf_since[ch].at(1) <= killed);
        CHECK(h.deaf_since[ch].at(1) > killed - 10s);
        CO_LET(bool got, publish_until_heard(fx, h, ch, "after the failover"));
        CHECK(got);
        CO_LET(bool still, publish_until_heard(fx, h, other, "other still heard"));
        CHECK(still);
      },
      60s);
  pushonce::test::sync_redis r(promoted);
  CHECK(r.integer({"PUBSUB", "SHARDNUMSUB", ch}) == 1);
  sub->stop();
}

}  // namespace test_cluster_sharded_pubsub_integration
