// Readiness and draining of pushonce-gateway (docs/protocol.md "Readiness and draining"):
// GET /readyz answers 200 while Redis answers and the subscriber is connected; on SIGTERM
// it turns 503 at once while /healthz stays 200 and open sessions keep being served for
// --drain-delay-ms; then the sessions are closed with 1001 and the process exits 0.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <exception>
#include <string>

#include "tests/support/deployment.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_drain_e2e {

using namespace std::chrono_literals;
using pushonce::test::hello_frame;
using pushonce::test::http_request;
using pushonce::test::wait_until;
using pushonce::test::ws_client;
using kind = pushonce::test::deployment::kind;

namespace {

using clock_type = std::chrono::steady_clock;

boost::json::object readyz(std::uint16_t port, int& status) {
  auto r = http_request("127.0.0.1", port, "GET", "/readyz");
  status = r.status;
  boost::system::error_code ec;
  auto v = boost::json::parse(r.body, ec);
  return !ec && v.is_object() ? v.as_object() : boost::json::object{};
}

std::string hello_of(ws_client& ws, const std::string& user) {
  ws.send(hello_frame(user));
  return ws.receive(5s).value_or("");
}

}  // namespace

TEST_CASE("gateway: /readyz turns 503 first on SIGTERM, sessions close 1001 after the delay") {
  pushonce::test::deployment d("drain", "readyz");
  d.start_leader();
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth", "--drain-delay-ms", "1500"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto port = d.port_of(gw);

  int status = 0;
  REQUIRE(wait_until(
      [&] {
        readyz(port, status);
        return status == 200;
      },
      10s, 50ms));
  auto ready = readyz(port, status);
  CHECK(ready.at("ready") == true);
  CHECK(ready.at("redis") == true);
  CHECK(ready.at("subscribed") == true);
  CHECK(ready.at("draining") == false);
  CHECK_FALSE(ready.contains("sharded"));  // a single Redis: no sharded subscriber

  ws_client alice;
  alice.connect("127.0.0.1", port);
  REQUIRE(hello_of(alice, "alice").find("\"welcome\"") != std::string::npos);

  auto sent = clock_type::now();
  gw.kill(SIGTERM);
  // not ready at once; alive; the session still served
  REQUIRE(wait_until(
      [&] {
        readyz(port, status);
        return status == 503;
      },
      1s, 20ms));
  auto not_ready = readyz(port, status);
  CHECK(not_ready.at("ready") == false);
  CHECK(not_ready.at("draining") == true);
  CHECK(not_ready.at("redis") == true);
  CHECK(http_request("127.0.0.1", port, "GET", "/healthz").status == 200);
  d.publish("alice", R"({"during":"drain"})");
  auto frame = alice.receive(1s);
  REQUIRE(frame.has_value());
  CHECK(frame->find("\"during\":\"drain\"") != std::string::npos);
  CHECK_FALSE(alice.closed());
  // A new session is refused while draining (503: a proxy that does not probe /readyz,
  // such as nginx with proxy_next_upstream http_503, sends it to another gateway).
  ws_client late;
  std::string refusal;
  try {
    late.connect("127.0.0.1", port);
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  CHECK_MESSAGE(refusal.find("503") != std::string::npos, refusal);

  // then 1001 after the delay, and exit 0
  REQUIRE(alice.wait_closed(5s));
  auto closed_after = clock_type::now() - sent;
  CHECK(alice.close_code() == 1001);
  CHECK(closed_after >= 1400ms);
  auto rc = gw.wait(5s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}

TEST_CASE("gateway: without --drain-delay-ms SIGTERM closes sessions with 1001 at once") {
  pushonce::test::deployment d("drain", "nodelay");
  d.start_leader();
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  ws_client bob;
  bob.connect("127.0.0.1", d.port_of(gw));
  REQUIRE(hello_of(bob, "bob").find("\"welcome\"") != std::string::npos);
  auto sent = clock_type::now();
  gw.kill(SIGTERM);
  REQUIRE(bob.wait_closed(5s));
  CHECK(bob.close_code() == 1001);
  CHECK(clock_type::now() - sent < 1000ms);
}

TEST_CASE("gateway: a bad --drain-delay-ms is a usage error") {
  auto r = pushonce::test::run_cli("pushonce-gateway", {"--drain-delay-ms", "-5"});
  CHECK(r.code() == 2);
  CHECK(r.error_line());
}

}  // namespace test_gateway_drain_e2e
