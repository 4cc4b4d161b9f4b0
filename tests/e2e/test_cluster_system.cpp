// The real programs on a real Redis Cluster (3 masters, 1 replica each): a leader and a
// worker with --redis-cluster, messages to users on every master delivered once each, then
// the master of one user's slot killed (its replica is promoted) and messages published
// after the failover delivered too. CTest label `cluster` (test case names hold "cluster").
#include "tests/support/redis_cluster.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sync_redis.hpp"

using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {
// Entries in a user's inbox, read on the master that serves it.
long long inbox_len(redis_cluster& c, const pushonce::keys& k, const std::string& user) {
  auto key = k.user(user, "inbox");
  sync_redis r(c.master_of(c.slot_of(key)));
  return r.integer({"XLEN", key});
}
}  // namespace

TEST_CASE("cluster system: leader and worker on a cluster deliver once, across a failover") {
  redis_cluster cluster;
  const std::string ns = unique_namespace("e2e", "cluster");
  pushonce::keys k(ns);
  environment env = {{"PUSHONCE_REDIS_CLUSTER", cluster.url()},
                     {"PUSHONCE_REDIS", std::nullopt},
                     {"PUSHONCE_NAMESPACE", ns},
                     {"PUSHONCE_LOG_LEVEL", "info"}};
  process leader(program_path("pushonce-leader"), {"run", "--id", "l1"}, env);
  process worker(program_path("pushonce-worker"), {"--id", "w1"}, env);

  // Users on every master.
  std::vector<std::string> users;
  for (auto port : cluster.masters())
    for (int i = 0;; ++i) {
      std::string u = "u" + std::to_string(port) + "-" + std::to_string(i);
      if (cluster.master_of(cluster.slot_of(k.user(u, ""))) == port) {
        users.push_back(u);
        break;
      }
    }
  REQUIRE(users.size() == 3);

  auto publish_all = [&](const std::string& round) {
    for (const auto& u : users) {
      // The worker may still be starting: a publish before it listens is re-driven by the
      // sweeper, so every publish counts once.
      auto r = run_cli("pushonce-leader",
                       {"publish", u, "{\"r\":\"" + round + "\"}", "--id", "r" + round, "--json"},
                       env, 30s);
      REQUIRE_MESSAGE(r.code() == 0, r.describe());
    }
  };
  publish_all("1");
  bool delivered = wait_until(
      [&] {
        for (const auto& u : users)
          if (inbox_len(cluster, k, u) != 1) return false;
        return true;
      },
      30s, 100ms);
  CHECK_MESSAGE(delivered, worker.stderr_text());
  auto status = run_cli("pushonce-leader", {"status", "--json"}, env);
  REQUIRE(status.out.is_object());
  CHECK(counter(status.out.as_object(), "delivered") == 3);

  // Fail over the master of users[0]'s slot; wait for the replica; then a second round.
  // The replica has the first round (WAIT on the master first: replication is async).
  {
    sync_redis r(cluster.master_of(cluster.slot_of(k.user(users[0], ""))));
    CHECK(r.integer({"WAIT", "1", "2000"}) == 1);
  }
  cluster.fail_master_of(cluster.slot_of(k.user(users[0], "")));
  // Publishing may fail while the programs learn the new map: retried by this test as a
  // client would, with an idempotency key (a failed publish may have been made).
  for (const auto& u : users) {
    bool ok = wait_until(
        [&] {
          auto r = run_cli("pushonce-leader",
                           {"publish", u, "{\"r\":\"2\"}", "--id", "r2", "--json"}, env, 30s);
          return r.code() == 0;
        },
        60s, 500ms);
    REQUIRE(ok);
  }
  bool after = wait_until(
      [&] {
        for (const auto& u : users)
          if (inbox_len(cluster, k, u) != 2) return false;
        return true;
      },
      60s, 200ms);
  CHECK_MESSAGE(after, worker.stderr_text());
  // Exactly once: two entries per user, no more, a while later (the sweeper had its turns).
  std::this_thread::sleep_for(3s);
  for (const auto& u : users) CHECK(inbox_len(cluster, k, u) == 2);
  CHECK(leader.running());
  CHECK(worker.running());
}
