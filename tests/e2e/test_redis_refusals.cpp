// Redis refusing work, through the real programs: a server at maxmemory (noeviction)
// answers OOM, a server running a long script answers BUSY. The publish API answers 503
// {"error":"unavailable"}, the CLI exits 1 with redis_unavailable, the gateway logs which
// refusal it was, and everything works again once Redis does.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_redis_refusals_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* api_key = "refusals-key-1";

struct stack {
  explicit stack(const redis_server& redis)
      : d(deployment_options{redis.url(),
                             redis.port(),
                             unique_namespace("e2e", "refusals"),
                             {{"PUSHONCE_API_KEY", api_key}},
                             {},
                             "warn"}) {
    port = d.port_of(d.start_gateway({"--dev-auth"}));
    REQUIRE_MESSAGE(d.wait_ready(10s), d.ready_failure());
  }
  http_reply publish() {
    headers auth{{"Authorization", std::string("Bearer ") + api_key},
                 {"Content-Type", "application/json"}};
    return http_request("127.0.0.1", port, "POST", "/api/publish",
                        R"({"user":"alice","data":{"n":1}})", auth);
  }
  deployment d;
  std::uint16_t port = 0;
};

// cli_names_code: the CLI's message names the refusal (a CLI started while Redis is BUSY
// cannot even log in: it gives up after its timeout, with redis_unavailable too).
void expect_unavailable(stack& s, const char* code, bool cli_names_code) {
  auto r = s.publish();
  INFO("publish API: ", r.status, " ", r.body);
  CHECK(r.status == 503);
  CHECK(json::parse(r.body).as_object().at("error") == "unavailable");

  auto cli = s.d.admin({"publish", "alice", R"({"n":2})", "--json"});
  INFO(cli.describe());
  CHECK(cli.code() == 1);
  CHECK(cli.error() == "redis_unavailable");
  if (cli_names_code) CHECK(cli.run.err.find(code) != std::string::npos);

  CHECK(wait_until(
      [&] { return s.d.logs().find(std::string("answered ") + code) != std::string::npos; }, 5s));
}

}  // namespace

TEST_CASE("Redis at maxmemory (OOM): publish API 503, CLI exit 1, a log line that says OOM") {
  redis_server redis({.extra_args = {"--maxmemory-policy", "noeviction"}});
  stack s(redis);
  REQUIRE(s.publish().status == 200);

  sync_redis r(redis.port());
  // More data than the limit, then the limit: every write is refused with OOM.
  r.cmd({"SET", "filler", std::string(2 * 1024 * 1024, 'x')});
  r.cmd({"CONFIG", "SET", "maxmemory", "1mb"});
  expect_unavailable(s, "OOM", true);

  r.cmd({"CONFIG", "SET", "maxmemory", "0"});
  auto again = s.publish();
  INFO(again.body);
  CHECK(again.status == 200);
}

TEST_CASE("Redis busy in a long script (BUSY): publish API 503, CLI exit 1, a log line") {
  redis_server redis({.extra_args = {"--busy-reply-threshold", "100"}});
  stack s(redis);
  REQUIRE(s.publish().status == 200);

  // A script that keeps Redis busy for up to 60 s (longer than the CLI waits for Redis,
  // however slow the machine), from a thread (the call blocks until it ends); it writes
  // nothing, so SCRIPT KILL ends it once the checks are done.
  // sync_redis gives up after 5 s (it throws): that is expected here, the script runs on.
  std::thread busy([port = redis.port()] {
    try {
      sync_redis r(port);
      r.cmd({"EVAL",
             "local s = redis.call('TIME')[1] + 0 "
             "while redis.call('TIME')[1] - s < 60 do end return 1",
             "0"});
    } catch (const std::exception&) {
    }
  });
  // BUSY only after busy-reply-threshold: wait until a plain client sees it.
  bool is_busy = wait_until(
      [&] {
        sync_redis probe(redis.port());
        auto p = probe.cmd({"PING"});
        return p && p->type == REDIS_REPLY_ERROR && std::string(p->str).rfind("BUSY", 0) == 0;
      },
      3s, 50ms);
  CHECK(is_busy);
  if (is_busy) expect_unavailable(s, "BUSY", false);
  REQUIRE(wait_until(
      [&] {
        sync_redis killer(redis.port());
        auto k = killer.cmd({"SCRIPT", "KILL"});
        return k && (k->type == REDIS_REPLY_STATUS ||
                     std::string_view(k->str, k->len).starts_with("NOTBUSY"));
      },
      10s, 100ms));
  busy.join();

  CHECK(wait_until([&] { return s.publish().status == 200; }, 10s, 200ms));
}

TEST_CASE("Redis that refuses CONFIG (as managed services do): the worker starts and delivers") {
  // No program may depend on CONFIG: managed services rename or refuse it.
  redis_server redis({.extra_args = {"--rename-command", "CONFIG", ""}});
  deployment d(deployment_options{
      redis.url(), redis.port(), unique_namespace("e2e", "noconfig"), {}, {}, "debug"});
  d.start_worker();
  REQUIRE_MESSAGE(d.wait_ready(10s), d.ready_failure());
  auto id = d.publish("alice", R"({"n":1})");
  CHECK(wait_until([&] { return d.redis().inbox(d.inbox_key("alice")).size() == 1; }, 10s));
  CHECK(!id.empty());
}

TEST_CASE("min-replicas-to-write without a replica (NOREPLICAS): publish API 503, CLI exit 1") {
  // A common Sentinel setting: the master refuses writes while too few replicas follow it.
  redis_server redis;
  stack s(redis);
  REQUIRE(s.publish().status == 200);

  sync_redis r(redis.port());
  r.cmd({"CONFIG", "SET", "min-replicas-to-write", "1"});
  expect_unavailable(s, "NOREPLICAS", true);

  r.cmd({"CONFIG", "SET", "min-replicas-to-write", "0"});
  auto again = s.publish();
  INFO(again.body);
  CHECK(again.status == 200);
}

TEST_CASE("a batch across bus shards, one shard refused: 207 with what was published") {
  redis_server redis;
  const auto ns = unique_namespace("e2e", "halfbatch");
  deployment d(deployment_options{redis.url(),
                                  redis.port(),
                                  ns,
                                  {{"PUSHONCE_API_KEY", api_key}, {"PUSHONCE_BUS_SHARDS", "2"}},
                                  {},
                                  "warn"});
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  d.start_worker();
  REQUIRE_MESSAGE(d.wait_ready(10s), d.ready_failure());

  const pushonce::keys k(ns, 2);
  std::string u0, u1;  // a user in each shard
  for (int i = 0; u0.empty() || u1.empty(); ++i) {
    auto u = "user" + std::to_string(i);
    (k.shard_of(u) == 0 ? u0 : u1) = u;
  }
  // Shard 1's outbox holds another type: its publish.lua call fails, shard 0's succeeds.
  sync_redis r(redis.port());
  r.cmd({"SET", k.bus(1, "outbox"), "broken"});

  headers auth{{"Authorization", std::string("Bearer ") + api_key},
               {"Content-Type", "application/json"}};
  auto body = R"({"messages":[{"user":")" + u0 + R"(","data":{"n":0}},{"user":")" + u1 +
              R"(","data":{"n":1}}]})";
  auto reply = http_request("127.0.0.1", port, "POST", "/api/publish", body, auth);
  INFO(reply.status, " ", reply.body);
  // Part of the batch went out: never a 5xx; the body says which part.
  CHECK(reply.status == 207);
  if (reply.status == 207) {
    auto results = json::parse(reply.body).as_object().at("results").as_array();
    REQUIRE(results.size() == 2);
    CHECK(results[0].as_object().contains("id"));
    CHECK_FALSE(results[0].as_object().contains("error"));
    CHECK(results[1].as_object().at("error") == "internal");
    CHECK_FALSE(results[1].as_object().contains("id"));
  }
  // What the answer says was published is delivered; the rest is not.
  CHECK(wait_until([&] { return d.redis().inbox(k.user(u0, "inbox")).size() == 1; }, 10s));
  CHECK(d.redis().inbox(k.user(u1, "inbox")).empty());

  // Once the shard is repaired, resending the refused message publishes it alone.
  r.cmd({"DEL", k.bus(1, "outbox")});
  auto retry = http_request("127.0.0.1", port, "POST", "/api/publish",
                            R"({"messages":[{"user":")" + u1 + R"(","data":{"n":1}}]})", auth);
  CHECK(retry.status == 200);
  CHECK(wait_until([&] { return d.redis().inbox(k.user(u1, "inbox")).size() == 1; }, 10s));
  CHECK(d.redis().inbox(k.user(u0, "inbox")).size() == 1);
}

TEST_CASE(
    "batches across bus shards while a shard breaks and heals: resending what 207 refused "
    "delivers each message once") {
  redis_server redis;
  const auto ns = unique_namespace("e2e", "shardfault");
  deployment d(deployment_options{redis.url(),
                                  redis.port(),
                                  ns,
                                  {{"PUSHONCE_API_KEY", api_key}, {"PUSHONCE_BUS_SHARDS", "2"}},
                                  {},
                                  "warn"});
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  d.start_worker();
  d.start_worker();
  REQUIRE_MESSAGE(d.wait_ready(10s), d.ready_failure());
  const pushonce::keys k(ns, 2);
  std::vector<std::string> users;
  std::set<unsigned> shards;
  for (int i = 0; i < 8; ++i) {
    users.push_back("sf" + std::to_string(i));
    shards.insert(k.shard_of(users.back()));
  }
  REQUIRE(shards.size() == 2);
  headers auth{{"Authorization", std::string("Bearer ") + api_key},
               {"Content-Type", "application/json"}};
  sync_redis r(redis.port());

  constexpr int batches = 30;
  int partial = 0, resent = 0;
  std::map<std::string, int> sent;                // user -> messages accepted
  std::vector<std::pair<std::size_t, int>> todo;  // (user, batch) not accepted yet
  for (int b = 0; b < batches || !todo.empty(); ++b) {
    REQUIRE(b < batches + 5);
    if (b == 10) r.cmd({"SET", k.bus(1, "outbox"), "broken"});  // shard 1 breaks
    if (b == 20) r.cmd({"DEL", k.bus(1, "outbox")});            // and is repaired
    // One message per user and batch, each with its idempotency key, after the refused
    // ones of earlier requests.
    if (b < batches)
      for (std::size_t i = 0; i < users.size(); ++i) todo.emplace_back(i, b);
    json::array msgs;
    for (auto [i, n] : todo)
      msgs.push_back(json::object{{"user", users[i]},
                                  {"data", json::object{{"b", n}}},
                                  {"id", "k" + std::to_string(n) + "-" + users[i]}});
    auto body = json::serialize(json::object{{"messages", msgs}});
    auto reply = http_request("127.0.0.1", port, "POST", "/api/publish", body, auth);
    INFO(reply.status, " ", reply.body);
    REQUIRE((reply.status == 200 || reply.status == 207 || reply.status == 500));
    if (reply.status == 500) continue;  // nothing published: all again
    if (reply.status == 207) ++partial;
    auto results = json::parse(reply.body).as_object().at("results").as_array();
    REQUIRE(results.size() == todo.size());
    std::vector<std::pair<std::size_t, int>> again;
    for (std::size_t j = 0; j < todo.size(); ++j) {
      if (results[j].as_object().contains("error")) {
        again.push_back(todo[j]);
      } else {
        CHECK_FALSE(results[j].as_object().at("duplicate").as_bool());
        ++sent[users[todo[j].first]];
      }
    }
    resent += static_cast<int>(again.size());
    todo = std::move(again);
  }
  CHECK(partial > 0);
  CHECK(resent > 0);
  // Every user got each batch's message once: its inbox holds exactly one per batch.
  for (const auto& u : users) {
    CHECK(sent[u] == batches);
    CHECK_MESSAGE(
        wait_until([&] { return d.redis().inbox(k.user(u, "inbox")).size() == batches; }, 15s), u,
        ": ", d.redis().inbox(k.user(u, "inbox")).size());
    std::set<long long> seen;
    for (const auto& [id, frame] : d.redis().inbox(k.user(u, "inbox")))
      seen.insert(json::parse(frame).as_object().at("data").as_object().at("b").as_int64());
    CHECK(seen.size() == static_cast<std::size_t>(batches));
  }
}

}  // namespace test_redis_refusals_e2e

namespace test_redis_refusals_e2e {

// docs/capacity.md "Leases": a renewal or a release that Redis refuses answers 503 and
// neither ends nor extends the lease; once Redis takes writes again the release goes through.
TEST_CASE(
    "Redis refusing writes (NOREPLICAS): admission renew and release answer 503, the lease "
    "unchanged") {
  redis_server redis;
  deployment d(deployment_options{redis.url(),
                                  redis.port(),
                                  unique_namespace("e2e", "leasewrites"),
                                  {{"PUSHONCE_API_KEY", api_key}},
                                  {},
                                  "warn"});
  d.start_leader();
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(10s), d.ready_failure());
  auto set = d.admin({"settings", "--session", "300"});
  REQUIRE_MESSAGE(set.code() == 0, set.describe());
  auto add = d.admin({"resource", "add", "r1"});
  REQUIRE_MESSAGE(add.code() == 0, add.describe());

  ws_client ws;
  ws.connect("127.0.0.1", port, "/ws");
  REQUIRE(ws.send(hello_frame("lena")));
  REQUIRE(ws.send(R"({"op":"join"})"));
  std::string id;
  REQUIRE(wait_until(
      [&] {
        auto f = ws.receive(50ms);
        if (!f) return false;
        auto o = json::parse(*f).as_object();
        if (str_field(o, "type") == "message" && str_field(o, "kind") == "assignment")
          id = str_field(o, "id");
        return !id.empty();
      },
      10s));
  headers auth{{"Authorization", std::string("Bearer ") + api_key}};
  auto state = [&] {
    auto r = http_request("127.0.0.1", port, "GET", "/api/admission/" + id, {}, auth);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return json::parse(r.body).as_object();
  };
  const auto before = state();
  REQUIRE(before.at("expires_at").is_int64());

  sync_redis r(redis.port());
  r.cmd({"CONFIG", "SET", "min-replicas-to-write", "1"});
  for (const char* what : {"renew", "release"}) {
    auto answer =
        http_request("127.0.0.1", port, "POST", "/api/admission/" + id + "/" + what, {}, auth);
    INFO(what, ": ", answer.status, " ", answer.body);
    CHECK(answer.status == 503);
    CHECK(str_field(json::parse(answer.body).as_object(), "error") == "unavailable");
  }
  auto cli = d.admin({"admission", "release", id, "--json"});
  INFO(cli.describe());
  CHECK(cli.code() == 1);
  CHECK(cli.error() == "redis_unavailable");
  const auto during = state();
  CHECK(str_field(during, "state") == "assigned");
  CHECK(during.at("expires_at") == before.at("expires_at"));

  r.cmd({"CONFIG", "SET", "min-replicas-to-write", "0"});
  auto released =
      http_request("127.0.0.1", port, "POST", "/api/admission/" + id + "/release", {}, auth);
  INFO(released.body);
  CHECK(released.status == 200);
  CHECK(str_field(json::parse(released.body).as_object(), "state") == "released");
}

}  // namespace test_redis_refusals_e2e
