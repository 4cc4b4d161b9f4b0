// The real programs on a real Redis Cluster (3 masters, 1 replica each): a leader and a
// worker with --redis-cluster, messages to users on every master delivered once each, then
// the master of one user's slot killed (its replica is promoted) and messages published
// after the failover delivered too. CTest label `cluster` (test case names hold "cluster").
#include "tests/support/redis_cluster.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <csignal>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_system_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {
// Entries in a user's inbox, read on the master that serves it.
long long inbox_len(redis_cluster& c, const pushonce::keys& k, const std::string& user) {
  auto key = k.user(user, "inbox");
  sync_redis r(c.master_of(c.slot_of(key)));
  return r.integer({"XLEN", key});
}

// One user per master of the cluster (the user's slot is served by that master).
std::vector<std::string> users_on_every_master(redis_cluster& cluster, const pushonce::keys& k,
                                               const std::string& prefix) {
  std::vector<std::string> users;
  for (auto port : cluster.masters())
    for (int i = 0;; ++i) {
      std::string u = prefix + std::to_string(port) + "-" + std::to_string(i);
      if (cluster.master_of(cluster.slot_of(k.user(u, ""))) == port) {
        users.push_back(u);
        break;
      }
    }
  return users;
}

// A gateway process on `port`, healthy (Redis reachable) when returned.
std::unique_ptr<process> start_gateway(std::uint16_t port, const environment& env,
                                       const std::string& id) {
  auto g = std::make_unique<process>(
      program_path("pushonce-gateway"),
      std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(port), "--dev-auth",
                               "--id", id},
      env);
  bool up = wait_until(
      [&] { return http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 1s).status == 200; },
      30s, 100ms);
  REQUIRE_MESSAGE(up, g->stderr_text());
  return g;
}

// POST /api/publish with an idempotency key, retried until accepted (a failover may refuse
// some attempts; a retry with the same key cannot publish twice).
void publish_api(std::uint16_t port, const std::string& user, const std::string& key) {
  std::string body =
      R"({"user":")" + user + R"(","data":{"k":")" + key + R"("},"id":")" + key + "\"}";
  headers auth{{"Authorization", "Bearer cluster-key"}, {"Content-Type", "application/json"}};
  bool ok = wait_until(
      [&] {
        return http_request("127.0.0.1", port, "POST", "/api/publish", body, auth).status == 200;
      },
      60s, 200ms);
  REQUIRE_MESSAGE(ok, "publish " << key);
}

struct got {
  std::vector<std::string> ids;
  std::vector<long long> offsets;
};

// Message frames until `n` arrived or `timeout` passed.
got receive_messages(ws_client& c, std::size_t n, std::chrono::milliseconds timeout) {
  got g;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (g.ids.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto f = c.receive(500ms);
    if (!f) {
      if (c.closed()) break;
      continue;
    }
    auto v = parse_or_null(*f);
    if (!v.is_object() || str_field(v.as_object(), "type") != "message") continue;
    g.ids.push_back(str_field(v.as_object(), "id"));
    g.offsets.push_back(int_field(v.as_object(), "offset"));
  }
  return g;
}

boost::json::object hello(ws_client& c, std::uint16_t port, const std::string& user,
                          const std::string& since = {}) {
  c.connect("127.0.0.1", port);
  REQUIRE(c.send(hello_frame(user, since)));
  auto w = c.receive(10s);
  REQUIRE(w);
  auto v = parse_or_null(*w);
  REQUIRE(v.is_object());
  REQUIRE(str_field(v.as_object(), "type") == "welcome");
  return v.as_object();
}
}  // namespace

TEST_CASE("cluster system: leader and worker on a cluster deliver once, across a failover" *
          doctest::test_suite("cluster")) {
  redis_cluster cluster;
  const std::string ns = unique_namespace("e2e", "cluster");
  pushonce::keys k(ns, 16);  // the cluster default of --bus-shards
  environment env = cluster.program_env(ns);
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
  CHECK(cluster.wait_replicated(k.user(users[0], "")) == 1);
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
  // Exactly once: two entries per user, no more, a while later.
  observe_quiet(3s, "a third entry once the sweeper had its turns");
  for (const auto& u : users) CHECK(inbox_len(cluster, k, u) == 2);
  CHECK(leader.running());
  CHECK(worker.running());
}

TEST_CASE(
    "cluster system: a gateway on the cluster, workers with --wait-replicas 1: each message "
    "once over WebSocket, resumed after a gateway kill -9" *
    doctest::test_suite("cluster")) {
  redis_cluster cluster;
  const std::string ns = unique_namespace("e2e", "cluster-gw");
  pushonce::keys k(ns, 16);  // the cluster default of --bus-shards
  environment env = cluster.program_env(ns, {{"PUSHONCE_API_KEY", "cluster-key"}});
  process leader(program_path("pushonce-leader"), {"run", "--id", "l1"}, env);
  process worker(program_path("pushonce-worker"), {"--id", "w1", "--wait-replicas", "1"}, env);
  const auto port = free_port();
  auto gw = start_gateway(port, env, "g1");

  auto users = users_on_every_master(cluster, k, "g");
  REQUIRE(users.size() == 3);
  std::vector<std::unique_ptr<ws_client>> clients;
  std::vector<std::string> epochs;
  for (const auto& u : users) {
    clients.push_back(std::make_unique<ws_client>());
    auto w = hello(*clients.back(), port, u);
    epochs.push_back(str_field(w, "epoch"));
  }
  for (int i = 1; i <= 5; ++i)
    for (const auto& u : users) publish_api(port, u, u + "-" + std::to_string(i));
  for (std::size_t j = 0; j < users.size(); ++j) {
    auto g = receive_messages(*clients[j], 5, 30s);
    CHECK_MESSAGE((g.offsets == std::vector<long long>{1, 2, 3, 4, 5}), worker.stderr_text());
    CHECK(std::set<std::string>(g.ids.begin(), g.ids.end()).size() == g.ids.size());
    // nothing more: once each
    CHECK(receive_messages(*clients[j], 1, 1s).ids.empty());
  }

  // kill -9 the gateway; messages published meanwhile (through a second gateway) are read
  // from the inbox when the clients resume on a new gateway.
  gw->kill(SIGKILL);
  gw->wait(10s);
  for (auto& c : clients) CHECK(c->wait_closed(5s));
  const auto port2 = free_port();
  auto gw2 = start_gateway(port2, env, "g2");
  for (int i = 6; i <= 8; ++i)
    for (const auto& u : users) publish_api(port2, u, u + "-" + std::to_string(i));
  for (std::size_t j = 0; j < users.size(); ++j) {
    ws_client back;
    auto w = hello(back, port2, users[j], R"({"epoch":")" + epochs[j] + R"(","offset":5})");
    CHECK(w.at("recovered") == true);
    auto g = receive_messages(back, 3, 30s);
    CHECK_MESSAGE((g.offsets == std::vector<long long>{6, 7, 8}), worker.stderr_text());
    CHECK(receive_messages(back, 1, 1s).ids.empty());
  }
  // Every WAIT had its replica.
  auto status = run_cli("pushonce-leader", {"status", "--json"}, env);
  REQUIRE(status.out.is_object());
  CHECK(counter(status.out.as_object(), "delivered") == 24);
  CHECK(counter(status.out.as_object(), "wait_replicas_timeout") == 0);
  CHECK(worker.running());
}

}  // namespace test_cluster_system_e2e
