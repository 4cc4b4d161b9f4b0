// A Redis Cluster losing a master for good and getting it back: while a slot has no master
// (no replica to promote) every command meets CLUSTERDOWN, and the gateway says so with
// 503 + Retry-After within the command deadline (never 500, never no answer), /readyz
// names the slots without a master, `pushonce-leader status` prints them, and a worker or
// gateway started with another --bus-shards than the namespace's stops with status 2.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_failover_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* api_key = "failover-api-key-1";

http_reply publish_one(std::uint16_t port, const std::string& user, int n) {
  auto body = json::serialize(json::object{
      {"messages", json::array{json::object{{"user", user}, {"data", json::object{{"n", n}}}}}}});
  return http_request("127.0.0.1", port, "POST", "/api/publish", body,
                      {{"Authorization", bearer(api_key)}}, 15s);
}

}  // namespace

TEST_CASE(
    "cluster failover: a slot without a master answers 503 with Retry-After within the "
    "deadline, /readyz and status name its slots; all well again when the master returns" *
    doctest::test_suite("cluster")) {
  redis_cluster_options o;
  o.replicas = 0;  // nothing to promote: the slots stay without a master until it returns
  redis_cluster cluster(o);
  const std::string ns = unique_namespace("e2e", "cluster-down");
  pushonce::keys k(ns, 16);  // the cluster default of --bus-shards
  environment env = cluster.program_env(ns, {{"PUSHONCE_API_KEY", api_key}});
  process worker(program_path("pushonce-worker"), {"--id", "w1"}, env);
  const auto port = free_port();
  process gateway(program_path("pushonce-gateway"),
                  {"--id", "g1", "--dev-auth", "--listen", "127.0.0.1:" + std::to_string(port)},
                  env);
  auto ready = [&] {
    return http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 2s).status == 200;
  };
  REQUIRE_MESSAGE(wait_until(ready, 30s, 100ms), gateway.stderr_text());

  // A user whose shard is on the second master: that master goes.
  const auto victim = cluster.masters().at(1);
  const auto victim_slots = cluster.slots_of(victim);
  std::string user;
  for (int i = 0; user.empty(); ++i) {
    auto u = "user" + std::to_string(i);
    if (cluster.master_of(cluster.slot_of(k.user(u, ""))) == victim) user = u;
  }
  REQUIRE(publish_one(port, user, 1).status == 200);

  cluster.node_on(victim).kill();
  auto unserved = [&] {
    auto r = http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 2s);
    if (r.status != 503) return false;
    auto v = parse_or_null(r.body);
    return v.is_object() && !str_field(v.as_object(), "slots_without_master").empty();
  };
  REQUIRE_MESSAGE(wait_until(unserved, 30s, 200ms), gateway.stderr_text());
  auto r = http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 2s);
  auto body = parse_or_null(r.body).as_object();
  // The victim's slots (one contiguous range, as redis-cli --cluster create assigns them).
  const auto expect =
      std::to_string(victim_slots.front()) + "-" + std::to_string(victim_slots.back());
  CHECK(str_field(body, "slots_without_master") == expect);
  CHECK(str_field(body, "reason").find(expect) != std::string::npos);
  CHECK(r.field("Retry-After") == "1");

  // The cluster refuses every command while a slot has no master (cluster-require-full-
  // coverage): a publish is answered 503 + Retry-After, within the command deadline (5 s)
  // and the client's retries, not 500 and not left unanswered.
  for (int n = 2; n < 4; ++n) {
    auto t0 = std::chrono::steady_clock::now();
    auto p = publish_one(port, user, n);
    auto took = std::chrono::steady_clock::now() - t0;
    CHECK_MESSAGE(p.status == 503, p.status << " " << p.body << p.error);
    CHECK(p.field("Retry-After") == "1");
    CHECK(str_field(parse_or_null(p.body).as_object(), "error") == "unavailable");
    CHECK(took < 8s);
  }

  auto status = run_cli("pushonce-leader", {"status"}, env);
  CHECK_MESSAGE(status.describe().find("slots without a master: " + expect) != std::string::npos,
                status.describe());

  // The master returns (same port, same data directory): publishes and readiness recover.
  cluster.node_on(victim).restart();
  REQUIRE(cluster.wait_ok(30s));
  REQUIRE_MESSAGE(wait_until(ready, 30s, 200ms), gateway.stderr_text());
  CHECK(publish_one(port, user, 4).status == 200);
  CHECK(worker.running());
  CHECK(gateway.running());
}

TEST_CASE("cluster layout: a worker with another --bus-shards than the namespace's stops (2)" *
          doctest::test_suite("cluster")) {
  redis_cluster_options o;
  o.replicas = 0;
  redis_cluster cluster(o);
  const std::string ns = unique_namespace("e2e", "cluster-layout");
  environment env = cluster.program_env(ns);
  process first(program_path("pushonce-worker"), {"--id", "w1"}, env);  // records 16
  const auto layout = ns + ":layout";
  sync_redis owner(cluster.master_of(cluster.slot_of(layout)));
  REQUIRE(wait_until([&] { return owner.text({"GET", layout}) == "bus-shards=16"; }, 20s, 100ms));
  process other(program_path("pushonce-worker"), {"--id", "w2", "--bus-shards", "4"}, env);
  auto code = other.wait(20s);
  REQUIRE(code);
  CHECK(*code == 2);
  CHECK(other.stderr_text().find("bus-shards=16") != std::string::npos);
  CHECK(first.running());
  auto refused = run_cli("pushonce-leader", {"publish", "alice", "{}", "--bus-shards", "2"}, env);
  CHECK(refused.code() == 2);
  CHECK(refused.describe().find("bus-shards=16") != std::string::npos);
}

}  // namespace test_cluster_failover_e2e
