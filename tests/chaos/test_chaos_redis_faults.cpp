// Redis faults that are not a crash (issue 23, "Failures no test drives yet"), each on a
// private redis-server with the real programs (docs/operations.md "Redis refusing writes"):
//
//  - Redis refusing writes: `CONFIG SET maxmemory 1` with noeviction makes every write fail
//    with OOM. /readyz turns 503 with the reason within a few seconds, POST /api/publish
//    answers 503 with Retry-After (never a 500) within the command deadline, the programs
//    keep running; after `CONFIG SET maxmemory 0` /readyz is 200 again and the publish
//    (retried with its idempotency key) is delivered exactly once. (MISCONF, writes refused
//    after a failed save, takes the same path (an error reply of class "unavailable") but is
//    hard to cause on purpose: OOM stands for both.)

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::deployment;
using pushonce::test::deployment_options;
using pushonce::test::hello_frame;
using pushonce::test::http_reply;
using pushonce::test::http_request;
using pushonce::test::redis_server;
using pushonce::test::redis_server_options;
using pushonce::test::sync_redis;
using pushonce::test::wait_until;
using pushonce::test::ws_client;
using kind = pushonce::test::deployment::kind;
using steady = std::chrono::steady_clock;

namespace {

constexpr const char* api_key = "faults-api-key";

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

json::object parse_object(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return !ec && v.is_object() ? v.as_object() : json::object{};
}

http_reply api_publish(std::uint16_t port, const std::string& body,
                       std::chrono::milliseconds timeout = 10s) {
  return http_request(
      "127.0.0.1", port, "POST", "/api/publish", body,
      {{"Authorization", std::string("Bearer ") + api_key}, {"Content-Type", "application/json"}},
      timeout);
}

deployment_options options_on(const redis_server& r, const std::string& ns) {
  deployment_options o;
  o.redis_url = r.url();
  o.redis_port = r.port();
  o.ns = ns;
  o.env = {{"PUSHONCE_API_KEY", std::string(api_key)}};
  return o;
}

void check_all_running(deployment& d) {
  for (auto k : {kind::leader, kind::worker, kind::gateway})
    for (auto* p : d.all(k)) CHECK_MESSAGE(p->running(), d.id_of(*p), " died\n", d.digest());
}

}  // namespace

TEST_CASE("redis faults: Redis refusing writes (OOM) turns /readyz 503 and publishes 503") {
  redis_server r;
  deployment d(options_on(r, "faults-oom"));
  d.start_leader();
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto port = d.port_of(gw);
  REQUIRE(wait_until(
      [&] { return http_request("127.0.0.1", port, "GET", "/readyz").status == 200; }, 10s, 50ms));

  ws_client alice;
  alice.connect("127.0.0.1", port);
  alice.send(hello_frame("alice"));
  auto welcome = alice.receive(5s);
  REQUIRE(welcome.has_value());
  REQUIRE(welcome->find("\"welcome\"") != std::string::npos);

  sync_redis admin(r.port());
  admin.cmd({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  admin.cmd({"CONFIG", "SET", "maxmemory", "1"});
  auto refused_at = steady::now();

  http_reply ready;
  REQUIRE(wait_until(
      [&] {
        ready = http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 2s);
        return ready.status == 503;
      },
      5s, 50ms));
  auto turned_ms = ms_since(refused_at);
  auto body = parse_object(ready.body);
  CHECK(body["ready"] == false);
  CHECK(body["redis"] == true);  // it answers, it refuses writes
  CHECK(body["writable"] == false);
  auto reason = body.contains("reason") ? json::value_to<std::string>(body["reason"]) : "";
  CHECK(reason.find("redis refuses writes") != std::string::npos);
  CHECK(reason.find("OOM") != std::string::npos);
  CHECK(ready.field("Retry-After") == "1");
  // Liveness is not readiness: the process is alive and Redis answers PING.
  CHECK(http_request("127.0.0.1", port, "GET", "/healthz").status == 200);

  const std::string msg = R"({"user":"alice","data":{"n":1},"id":"oom-1"})";
  auto t0 = steady::now();
  auto refused = api_publish(port, msg);
  auto publish_ms = ms_since(t0);
  CHECK_MESSAGE(refused.status == 503, refused.status, " ", refused.body, " ", refused.error);
  CHECK(parse_object(refused.body)["error"] == "unavailable");
  CHECK(refused.field("Retry-After") == "1");
  CHECK(publish_ms < 6000);  // within the command deadline (5 s)
  // A few more while it lasts: always 503, never a 500.
  for (int i = 0; i < 5; ++i) CHECK(api_publish(port, msg).status == 503);
  std::this_thread::sleep_for(2s);  // heartbeats, claims and leases fail for a while
  check_all_running(d);

  admin.cmd({"CONFIG", "SET", "maxmemory", "0"});
  auto back_at = steady::now();
  REQUIRE(wait_until(
      [&] { return http_request("127.0.0.1", port, "GET", "/readyz").status == 200; }, 5s, 50ms));
  auto back_ms = ms_since(back_at);
  http_reply accepted;
  REQUIRE(wait_until(
      [&] {
        accepted = api_publish(port, msg);
        return accepted.status == 200;
      },
      10s, 200ms));
  auto id = json::value_to<std::string>(parse_object(accepted.body)["id"]);

  std::vector<std::string> got;
  for (auto& f : alice.drain(1500ms))
    if (f.find("\"type\":\"message\"") != std::string::npos) got.push_back(f);
  REQUIRE(got.size() == 1);
  CHECK(got[0].find("\"id\":\"" + id + "\"") != std::string::npos);
  CHECK(got[0].find("\"n\":1") != std::string::npos);
  CHECK(d.redis().inbox(d.inbox_key("alice")).size() == 1);
  check_all_running(d);
  fmt::print(
      "redis faults (OOM): /readyz 503 after {} ms, reason \"{}\"; publish 503 in {} ms; "
      "/readyz 200 again {} ms after maxmemory 0; delivered once (id {})\n",
      turned_ms, reason, publish_ms, back_ms, id);
}
