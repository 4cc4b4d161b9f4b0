// The real programs on a real Redis Cluster with sharded Pub/Sub: a leader, a worker and a
// gateway with --bus-shards 4. Messages posted to /api/publish are SPUBLISHed on their bus
// shard's channel, claimed by the worker, SPUBLISHed on the user's channel and sent to a
// WebSocket client — every message once, in offset order — also across a move of the user's
// slot to another master (the gateway resubscribes on the new owner and catches up from the
// inbox), and across a failover of the master that serves a user's channel, during which
// /readyz answers 503 with "sharded":false. CTest label `cluster` (test case names hold
// "cluster").
#include "tests/support/redis_cluster.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <atomic>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_sharded_system_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* api_key = "sharded-api-key-1";

// POST /api/publish of `n` messages to `user`, data {"n":first..first+n-1}; the ids.
std::vector<std::string> post(std::uint16_t port, const std::string& user, int first, int n) {
  json::array msgs;
  for (int i = first; i < first + n; ++i)
    msgs.push_back(json::object{{"user", user}, {"data", json::object{{"n", i}}}});
  auto body = json::serialize(json::object{{"messages", std::move(msgs)}});
  auto r = http_request("127.0.0.1", port, "POST", "/api/publish", body,
                        {{"Authorization", std::string("Bearer ") + api_key}});
  REQUIRE_MESSAGE(r.status == 200, (r.body + r.error));
  std::vector<std::string> ids;
  auto reply = json::parse(r.body);
  for (auto& v : reply.as_object().at("results").as_array())
    ids.emplace_back(v.as_object().at("id").as_string());
  return ids;
}

// Message frames received until every id of `want` was seen or the time is up: id -> count,
// and the offsets in arrival order.
struct received {
  std::map<std::string, int> ids;
  std::vector<long long> offsets;
  void take(const std::string& frame) {
    auto v = json::parse(frame).as_object();
    if (v.at("type").as_string() != "message") return;
    ++ids[std::string(v.at("id").as_string())];
    offsets.push_back(v.at("offset").as_int64());
  }
};
void receive_until(ws_client& c, const std::set<std::string>& want, received& got,
                   std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  auto all = [&] {
    for (auto& id : want)
      if (!got.ids.count(id)) return false;
    return true;
  };
  while (!all() && std::chrono::steady_clock::now() < deadline) {
    auto f = c.receive(200ms);
    if (!f) {
      if (c.closed()) break;
      continue;
    }
    got.take(*f);
  }
}

}  // namespace

TEST_CASE(
    "cluster sharded system: --bus-shards 4, every message once over WebSocket, across a "
    "slot move" *
    doctest::test_suite("cluster")) {
  redis_cluster cluster;
  const std::string ns = unique_namespace("e2e", "sharded");
  pushonce::keys k(ns, 4);
  environment env =
      cluster.program_env(ns, {{"PUSHONCE_BUS_SHARDS", "4"}, {"PUSHONCE_API_KEY", api_key}});
  process leader(program_path("pushonce-leader"), {"run", "--id", "l1"}, env);
  process worker(program_path("pushonce-worker"), {"--id", "w1"}, env);
  auto port = free_port();
  process gateway(program_path("pushonce-gateway"),
                  {"--id", "g1", "--dev-auth", "--listen", "127.0.0.1:" + std::to_string(port),
                   "--bus-shards", "4"},
                  env);
  // The worker listens on the 4 shard channels, each on the master of its slot.
  bool listening = wait_until(
      [&] {
        for (unsigned n = 0; n < 4; ++n) {
          auto ch = k.bus_channel(n);
          sync_redis r(cluster.master_of(cluster.slot_of(ch)));
          if (r.integer({"PUBSUB", "SHARDNUMSUB", ch}) != 1) return false;
        }
        return true;
      },
      30s, 100ms);
  REQUIRE_MESSAGE(listening, worker.stderr_text());
  REQUIRE(wait_until(
      [&] { return http_request("127.0.0.1", port, "GET", "/readyz").status == 200; }, 30s, 100ms));
  // On a cluster readiness also follows the sharded subscriber (user channels).
  CHECK(http_request("127.0.0.1", port, "GET", "/readyz").body.find(R"("sharded":true)") !=
        std::string::npos);

  const std::string user = "alice";
  ws_client c;
  c.connect("127.0.0.1", port);
  REQUIRE(c.send(R"({"op":"hello","user":"alice"})"));
  auto welcome = c.receive(10s);
  REQUIRE_MESSAGE(welcome, gateway.stderr_text());
  REQUIRE(json::parse(*welcome).as_object().at("type").as_string() == "welcome");
  // The gateway SSUBSCRIBEd the user's channel on the master of the user's slot.
  auto ch = k.user_channel(user);
  unsigned slot = cluster.slot_of(ch);
  {
    sync_redis r(cluster.master_of(slot));
    CHECK(r.integer({"PUBSUB", "SHARDNUMSUB", ch}) == 1);
  }

  std::set<std::string> want;
  received got;
  for (auto& id : post(port, user, 0, 20)) want.insert(id);
  receive_until(c, want, got, 20s);
  CHECK_MESSAGE(got.ids.size() == 20, (gateway.stderr_text() + worker.stderr_text()));

  // The user's slot moves to another master: the gateway follows it.
  auto from = cluster.master_of(slot);
  std::uint16_t to = 0;
  for (auto p : cluster.masters())
    if (p != from) to = p;
  cluster.move_slot(slot, to);
  for (int round = 0; round < 5; ++round)
    for (auto& id : post(port, user, 20 + 10 * round, 10)) want.insert(id);
  receive_until(c, want, got, 30s);
  CHECK_MESSAGE(got.ids.size() == want.size(), (gateway.stderr_text() + worker.stderr_text()));
  bool resubscribed = wait_until(
      [&] {
        sync_redis r(to);
        return r.integer({"PUBSUB", "SHARDNUMSUB", ch}) == 1;
      },
      10s, 100ms);
  CHECK(resubscribed);
  for (auto& id : post(port, user, 100, 10)) want.insert(id);
  receive_until(c, want, got, 20s);

  // Every message exactly once, offsets 1..N in order.
  for (auto& f : c.drain(1s)) got.take(f);
  CHECK(got.ids.size() == want.size());
  for (auto& [id, n] : got.ids)
    CHECK_MESSAGE(n == 1, "message " << id << " sent " << n << " times");
  for (auto& id : want) CHECK_MESSAGE(got.ids.count(id) == 1, "message " << id << " missing");
  for (std::size_t i = 0; i < got.offsets.size(); ++i)
    CHECK(got.offsets[i] == static_cast<long long>(i) + 1);
  CHECK(leader.running());
  CHECK(worker.running());
  CHECK(gateway.running());
}

TEST_CASE(
    "cluster sharded system: /readyz says sharded:false while the master of a user's channel "
    "is down, true again after its replica took over; the session gets every message once" *
    doctest::test_suite("cluster")) {
  redis_cluster cluster;
  const std::string ns = unique_namespace("e2e", "sharded-ready");
  pushonce::keys k(ns, 16);
  environment env = cluster.program_env(ns, {{"PUSHONCE_API_KEY", api_key}});
  process leader(program_path("pushonce-leader"), {"run", "--id", "l1"}, env);
  process worker(program_path("pushonce-worker"), {"--id", "w1"}, env);
  auto port = free_port();
  process gateway(program_path("pushonce-gateway"),
                  {"--id", "g1", "--dev-auth", "--listen", "127.0.0.1:" + std::to_string(port)},
                  env);
  auto ready_sharded = [&] {
    auto r = http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 1s);
    return r.status == 200 && r.body.find(R"("sharded":true)") != std::string::npos;
  };
  REQUIRE_MESSAGE(wait_until(ready_sharded, 30s, 100ms), gateway.stderr_text());

  const std::string user = "alice";
  ws_client c;
  c.connect("127.0.0.1", port);
  REQUIRE(c.send(hello_frame(user)));
  auto welcome = c.receive(10s);
  REQUIRE_MESSAGE(welcome, gateway.stderr_text());
  REQUIRE(json::parse(*welcome).as_object().at("type").as_string() == "welcome");
  std::set<std::string> want;
  received got;
  for (auto& id : post(port, user, 0, 5)) want.insert(id);
  receive_until(c, want, got, 20s);
  REQUIRE_MESSAGE(got.ids.size() == 5, (gateway.stderr_text() + worker.stderr_text()));

  // The replica must hold the user's offsets before its master dies (replication is
  // asynchronous), or the session would rightly be closed with 1013 (offsets went back).
  const auto ch = k.user_channel(user);
  REQUIRE(cluster.wait_replicated(ch) == 1);

  // Poll /readyz through the failover: the gateway's subscription to alice's channel sits on
  // a dead node until the slot map names the promoted replica (at least the node timeout).
  std::atomic<bool> stop{false}, saw_down{false};
  std::string down_body;
  std::thread poller([&] {
    while (!stop) {
      auto r = http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 1s);
      if (r.status == 503 && r.body.find(R"("sharded":false)") != std::string::npos &&
          !saw_down.exchange(true))
        down_body = r.body;
      pace(25ms, "/readyz every 25 ms through the failover");
    }
  });
  cluster.fail_master_of(cluster.slot_of(ch));
  const bool back = wait_until(ready_sharded, 30s, 100ms);
  stop = true;
  poller.join();
  CHECK_MESSAGE(saw_down, "no 503 with \"sharded\":false during the failover");
  CHECK(down_body.find(R"("ready":false)") != std::string::npos);
  REQUIRE_MESSAGE(back, gateway.stderr_text());

  // The same session gets what is published after the failover, once each, offsets on.
  for (int i = 5; i < 10; ++i) {
    const std::string key = "after-" + std::to_string(i);
    const std::string body =
        R"({"user":"alice","data":{"n":)" + std::to_string(i) + R"(},"id":")" + key + "\"}";
    bool ok = wait_until(
        [&] {
          auto r = http_request("127.0.0.1", port, "POST", "/api/publish", body,
                                {{"Authorization", std::string("Bearer ") + api_key}});
          if (r.status != 200) return false;
          want.insert(std::string(json::parse(r.body).as_object().at("id").as_string()));
          return true;
        },
        30s, 200ms);
    REQUIRE_MESSAGE(ok, "publish " << key);
  }
  receive_until(c, want, got, 30s);
  for (auto& f : c.drain(1s)) got.take(f);
  CHECK_MESSAGE(got.ids.size() == 10, (gateway.stderr_text() + worker.stderr_text()));
  for (auto& [id, n] : got.ids)
    CHECK_MESSAGE(n == 1, "message " << id << " sent " << n << " times");
  CHECK(got.offsets == std::vector<long long>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(gateway.running());
}

}  // namespace test_cluster_sharded_system_e2e
