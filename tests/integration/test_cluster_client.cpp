// The cluster client (redis::connection with cluster seeds) on a real 3-master cluster with
// replicas: routing by key to every master, scripts, pipelines across nodes, MOVED after a
// slot was resharded, ASK during a migration, and a master failover.
#include "core/redis/connection.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/redis/scripts.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/support/sync_redis.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_client_integration {

using pushonce::test::cluster_fixture;
using pushonce::test::get_cmd;
using pushonce::test::set_cmd;
using pushonce::test::sync_redis;
namespace redis = pushonce::redis;
using namespace std::chrono_literals;

namespace {
redis::command words(std::initializer_list<std::string> w) {
  return redis::command(w);
}
// What the node on `port` itself holds under `key` (no redirection followed).
std::string held_by(std::uint16_t port, const std::string& key) {
  sync_redis r(port);
  auto rep = r.cmd({"GET", key});
  return rep->type == REDIS_REPLY_STRING ? std::string(rep->str, rep->len) : "<none>";
}
}  // namespace

TEST_CASE("cluster client: routes by key to every master; scripts; pipelines; ASK" *
          doctest::test_suite("cluster")) {
  cluster_fixture fx;
  auto masters = fx.cluster.masters();
  REQUIRE(masters.size() == 3);
  std::vector<std::string> keys;
  for (auto port : masters) keys.push_back(fx.key_on(port, "route"));

  fx.run([&]() -> boost::asio::awaitable<void> {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      CO_LET(auto set, fx.conn->exec(set_cmd(keys[i], "v" + std::to_string(i))));
      CHECK(set.ok());
      CHECK(set.value.str == "OK");
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      CO_LET(auto got, fx.conn->exec(get_cmd(keys[i])));
      CHECK(got.ok());
      CHECK(got.value.str == "v" + std::to_string(i));
    }
    CHECK(fx.conn->connected());

    // A pipeline across the three masters: results in order.
    std::vector<redis::command> batch;
    for (auto& k : keys) batch.push_back(get_cmd(k));
    batch.push_back(words({"PING"}));
    CO_LET(auto all, fx.conn->exec_all(std::move(batch)));
    REQUIRE(all.size() == 4);
    CHECK(all[0].value.str == "v0");
    CHECK(all[1].value.str == "v1");
    CHECK(all[2].value.str == "v2");
    CHECK(all[3].value.str == "PONG");

    // A script: EVALSHA before any SCRIPT LOAD answers NOSCRIPT; eval() loads it (on every
    // master) and runs it on the key's owner.
    redis::script s{"t", "return redis.call('GET', KEYS[1])", ""};
    CO_LET(auto loaded, fx.conn->exec(words({"SCRIPT", "LOAD", s.text})));
    REQUIRE(loaded.ok());
    s.sha1 = loaded.value.str;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::vector<std::string> ks{keys[i]};
      CO_LET(auto r, redis::eval(*fx.conn, s, ks, {}));
      CHECK(r.ok());
      CHECK(r.value.str == "v" + std::to_string(i));
    }
  });
  // Each key lives on its own master (the client did not just use one node).
  for (std::size_t i = 0; i < keys.size(); ++i)
    CHECK(held_by(masters[i], keys[i]) == "v" + std::to_string(i));

  // ASK: the slot of keys[0] is being migrated to another master and keys[0] has moved
  // already: its owner answers ASK and the client follows it with ASKING.
  unsigned slot = fx.cluster.slot_of(keys[0]);
  std::string stays = keys[0] + ":stays";  // same hash tag, same slot, not migrated
  {
    sync_redis r(masters[0]);
    r.cmd({"SET", stays, "here"});
  }
  fx.cluster.begin_move(slot, masters[1], {keys[0]});
  CHECK(held_by(masters[0], keys[0]) == "<none>");
  fx.run([&]() -> boost::asio::awaitable<void> {
    CO_LET(auto got, fx.conn->exec(get_cmd(keys[0])));
    CHECK(got.ok());
    CHECK(got.value.str == "v0");
    CO_LET(auto here, fx.conn->exec(get_cmd(stays)));
    CHECK(here.value.str == "here");
  });
}

TEST_CASE("cluster client: MOVED after a slot was resharded" * doctest::test_suite("cluster")) {
  cluster_fixture fx;
  auto masters = fx.cluster.masters();
  const std::string key = fx.key_on(masters[0], "moved");
  fx.run([&]() -> boost::asio::awaitable<void> {
    CO_LET(auto set, fx.conn->exec(set_cmd(key, "before")));
    CHECK(set.ok());
  });
  fx.cluster.move_slot(fx.cluster.slot_of(key), masters[2]);
  fx.run([&]() -> boost::asio::awaitable<void> {
    // The client's map still names the old owner: it answers MOVED, the client follows.
    CO_LET(auto got, fx.conn->exec(get_cmd(key)));
    CHECK(got.ok());
    CHECK(got.value.str == "before");
    CO_LET(auto set, fx.conn->exec(set_cmd(key, "after")));
    CHECK(set.ok());
  });
  CHECK(held_by(masters[2], key) == "after");
}

TEST_CASE("cluster client: a master fails over to its replica" * doctest::test_suite("cluster")) {
  cluster_fixture fx;
  auto masters = fx.cluster.masters();
  const std::string key = fx.key_on(masters[1], "failover");
  fx.run([&]() -> boost::asio::awaitable<void> {
    CO_LET(auto set, fx.conn->exec(set_cmd(key, "kept")));
    CHECK(set.ok());
  });
  // The write must be on the replica before the master dies (replication is asynchronous).
  CHECK(fx.cluster.wait_replicated(key) == 1);
  auto promoted = fx.cluster.fail_master_of(fx.cluster.slot_of(key));
  CHECK(promoted != masters[1]);
  // Commands may fail while the client learns the new map (a dead connection, a timeout);
  // within a few seconds they reach the promoted replica.
  fx.run(
      [&]() -> boost::asio::awaitable<void> {
        redis::result got;
        CO_DO(pushonce::test::co_wait_for(
            "a GET answered by the promoted replica",
            [&]() -> boost::asio::awaitable<bool> {
              CO_LET(got, fx.conn->exec(get_cmd(key)));
              co_return got.ok();
            },
            20s, 100ms));
        CHECK(got.value.str == "kept");
        CO_LET(auto set, fx.conn->exec(set_cmd(key, "new master")));
        CHECK(set.ok());
      },
      60s);
  CHECK(held_by(promoted, key) == "new master");
}

}  // namespace test_cluster_client_integration
