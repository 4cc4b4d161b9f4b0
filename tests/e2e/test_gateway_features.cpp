// End-to-end tests of the gateway's browser-facing features with the real programs:
// JWT auth over a real socket, accept before the deadline vs expiry, live position frames,
// the admin status API, /metrics and the embedded web files.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/jwt.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_features_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* secret = "feature-test-secret-0123456789abcdef";
constexpr const char* admin_token = "admin-token-1";

// A leader, a worker and a gateway in a fresh namespace on the shared redis-server, with a
// JWT secret and an admin token.
struct system_under_test : deployment {
  explicit system_under_test(std::vector<std::string> leader_args = {}, bool dev_auth = true,
                             std::vector<std::string> worker_args = {},
                             std::vector<std::string> gateway_args = {})
      : deployment("feat", "sys",
                   {{"PUSHONCE_JWT_SECRET", secret}, {"PUSHONCE_ADMIN_TOKEN", admin_token}}) {
    start_leader(std::move(leader_args));
    start_worker(std::move(worker_args));
    if (dev_auth) gateway_args.insert(gateway_args.begin(), "--dev-auth");
    port = port_of(start_gateway(std::move(gateway_args)));
    REQUIRE_MESSAGE(wait_ready(), ready_failure());
  }
  /// pushonce-leader ARGS --json.
  run_result cli(std::vector<std::string> args) {
    args.push_back("--json");
    return admin(std::move(args), {}, 10s).run;
  }
  std::unique_ptr<ws_client> connect(const std::string& hello) {
    auto c = std::make_unique<ws_client>();
    c->connect("127.0.0.1", port);
    REQUIRE(c->send(hello));
    return c;
  }
  std::uint16_t port = 0;
};

json::object next_of_type(ws_client& c, std::string_view type, std::chrono::milliseconds t = 5s) {
  auto deadline = std::chrono::steady_clock::now() + t;
  while (std::chrono::steady_clock::now() < deadline) {
    auto f = c.receive(200ms);
    if (!f) {
      if (c.closed()) break;
      continue;
    }
    auto v = json::parse(*f).as_object();
    if (v.at("type").is_string() && v.at("type").as_string() == type) return v;
  }
  return {};
}

std::string hello_token(const std::string& token) {
  return json::serialize(json::object{{"op", "hello"}, {"token", token}});
}

}  // namespace

TEST_CASE("gateway features: JWT hello — valid, expired, wrong signature, alg none, missing") {
  system_under_test sys({}, /*dev_auth=*/false);
  auto good = sys.connect(hello_token(jwt::mint("alice", 60s, secret)));
  auto w = next_of_type(*good, "welcome");
  REQUIRE_FALSE(w.empty());
  CHECK(w.at("user") == "alice");

  auto refused = [&](const std::string& hello, const std::string& reason_part) {
    auto c = sys.connect(hello);
    CHECK(c->wait_closed(5s));
    CHECK(c->close_code() == 1008);
    CHECK(c->close_reason().find(reason_part) != std::string::npos);
  };
  refused(hello_token(jwt::mint("alice", -120s, secret)), "expired");  // past the 30 s leeway
  refused(hello_token(jwt::mint("alice", 60s, "not-the-secret")), "invalid token");
  // {"alg":"none"} header, {"sub":"alice","exp":<far future>} payload, no signature.
  refused(hello_token(
              "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMH0."),
          "invalid token");
  refused(R"({"op":"hello"})", "token");
  refused(R"({"op":"hello","user":"alice"})", "token");  // no --dev-auth: user is not trusted
  // A user only acts as itself: alice's token cannot join as bob.
  REQUIRE(good->send(R"({"op":"join","queue":"default"})"));
  auto joined = next_of_type(*good, "joined");
  REQUIRE_FALSE(joined.empty());
  auto status = sys.cli({"queue"});
  CHECK(status.out.find("\"alice\"") != std::string::npos);
}

TEST_CASE("gateway features: accept before the deadline; an unaccepted assignment expires") {
  system_under_test sys({"--accept-timeout", "1"});
  auto alice = sys.connect(R"({"op":"hello","user":"alice"})");
  auto bob = sys.connect(R"({"op":"hello","user":"bob"})");
  REQUIRE_FALSE(next_of_type(*alice, "welcome").empty());
  REQUIRE_FALSE(next_of_type(*bob, "welcome").empty());
  REQUIRE(alice->send(R"({"op":"join"})"));
  REQUIRE_FALSE(next_of_type(*alice, "joined").empty());
  REQUIRE(bob->send(R"({"op":"join"})"));
  REQUIRE_FALSE(next_of_type(*bob, "joined").empty());
  CHECK(sys.cli({"resource", "add", "room-1"}).exit_code == 0);

  // alice does not accept: after 1 s she gets `expired`, and room-1 goes to bob.
  auto a = next_of_type(*alice, "message");
  REQUIRE_FALSE(a.empty());
  CHECK(a.at("kind") == "assignment");
  CHECK(a.at("data").at("accept_by").is_int64());
  auto expired = next_of_type(*alice, "message", 5s);
  REQUIRE_FALSE(expired.empty());
  CHECK(expired.at("kind") == "expired");
  CHECK(expired.at("data").at("id") == a.at("id"));
  REQUIRE(alice->send(json::serialize(json::object{{"op", "accept"}, {"id", a.at("id")}})));
  auto late = next_of_type(*alice, "error");
  CHECK(late.at("code") == "not_found");

  auto b = next_of_type(*bob, "message", 5s);
  REQUIRE_FALSE(b.empty());
  CHECK(b.at("data").at("resource") == "room-1");
  REQUIRE(bob->send(json::serialize(json::object{{"op", "accept"}, {"id", b.at("id")}})));
  auto accepted = next_of_type(*bob, "accepted");
  REQUIRE_FALSE(accepted.empty());
  CHECK(accepted.at("id") == b.at("id"));
  // Accepted: no expiry follows, bob keeps the resource.
  observe_quiet(1500ms, "an expiry of the accepted assignment");
  auto list = sys.cli({"resource", "list"});
  CHECK(list.out.find(R"("user":"bob")") != std::string::npos);
}

TEST_CASE("gateway features: waiting users get position frames when the queue moves") {
  system_under_test sys;
  std::vector<std::unique_ptr<ws_client>> users;
  for (int i = 1; i <= 3; ++i) {
    users.push_back(sys.connect(R"({"op":"hello","user":"p)" + std::to_string(i) + "\"}"));
    REQUIRE_FALSE(next_of_type(*users.back(), "welcome").empty());
    REQUIRE(users.back()->send(R"({"op":"join"})"));
    auto j = next_of_type(*users.back(), "joined");
    CHECK(j.at("position") == i);
  }
  // One resource: p1 is assigned; p2 moves to 1, p3 to 2 — pushed, no polling.
  CHECK(sys.cli({"resource", "add", "r1"}).exit_code == 0);
  auto p2 = next_of_type(*users[1], "position");
  REQUIRE_FALSE(p2.empty());
  CHECK(p2.at("position") == 1);
  CHECK(p2.at("queue") == "default");
  auto p3 = next_of_type(*users[2], "position");
  CHECK(p3.at("position") == 2);
  // p2 leaves through the CLI: p3 becomes 1.
  CHECK(sys.cli({"leave", "p2"}).exit_code == 0);
  auto p3b = next_of_type(*users[2], "position");
  CHECK(p3b.at("position") == 1);
}

TEST_CASE("gateway features: position frames and answers carry the estimated wait eta_s") {
  system_under_test sys;
  std::vector<std::unique_ptr<ws_client>> users;
  for (int i = 1; i <= 8; ++i) {
    users.push_back(sys.connect(R"({"op":"hello","user":"w)" + std::to_string(i) + "\"}"));
    REQUIRE_FALSE(next_of_type(*users.back(), "welcome").empty());
    REQUIRE(users.back()->send(R"({"op":"join"})"));
    auto j = next_of_type(*users.back(), "joined");
    REQUIRE(j.contains("eta_s"));
    CHECK(j.at("eta_s").is_null());  // nothing assigned yet: nothing to go by
  }
  auto before = json::parse(sys.cli({"position", "w8"}).out).as_object();
  REQUIRE(before.contains("eta_s"));
  CHECK(before.at("eta_s").is_null());

  // Assignments at a steady pace: the pushed frames carry a number.
  for (int i = 1; i <= 3; ++i) {
    CHECK(sys.cli({"resource", "add", "e" + std::to_string(i)}).exit_code == 0);
    pace(300ms, "assignments at a steady pace");
  }
  json::object pushed;
  for (int tries = 0; tries < 20 && (pushed.empty() || !pushed.at("eta_s").is_int64()); ++tries)
    pushed = next_of_type(*users[7], "position", 1s);
  REQUIRE_FALSE(pushed.empty());
  REQUIRE(pushed.at("eta_s").is_int64());
  CHECK(pushed.at("eta_s").as_int64() >= 1);
  // A position answer, and the CLI's, too.
  REQUIRE(users[7]->send(R"({"op":"position"})"));
  // A pushed frame sent before the third assignment (position 6) may still come first.
  json::object answer;
  for (int tries = 0; tries < 10 && (answer.empty() || answer.at("position") != 5); ++tries)
    answer = next_of_type(*users[7], "position", 1s);
  REQUIRE_FALSE(answer.empty());
  CHECK(answer.at("position") == 5);
  CHECK(answer.at("eta_s").is_int64());
  auto cli = json::parse(sys.cli({"position", "w8"}).out).as_object();
  CHECK(cli.at("position") == 5);
  CHECK(cli.at("eta_s").is_int64());

  // Paused: nothing to go by (the gateway's read is at most a second old).
  CHECK(sys.cli({"pause"}).exit_code == 0);
  auto paused = json::parse(sys.cli({"position", "w8"}).out).as_object();
  CHECK(paused.at("eta_s").is_null());
  json::object answer_paused;
  CHECK(wait_until(  // polled: the gateway reads once a second
      [&] {
        REQUIRE(users[7]->send(R"({"op":"position"})"));
        answer_paused = next_of_type(*users[7], "position");
        REQUIRE_FALSE(answer_paused.empty());
        return answer_paused.at("eta_s").is_null();
      },
      6s, 200ms, 200ms));
}

TEST_CASE("gateway features: admin status API, metrics, web files") {
  system_under_test sys;
  CHECK(http_request("127.0.0.1", sys.port, "GET", "/api/status").status == 401);
  auto st = http_request("127.0.0.1", sys.port, "GET", "/api/status?queue=default", {},
                         {{"Authorization", std::string("Bearer ") + admin_token}});
  REQUIRE(st.status == 200);
  auto s = json::parse(st.body).as_object();
  CHECK(s.contains("counters"));
  CHECK(s.at("workers").as_array().size() == 1);
  CHECK(s.at("leader").is_object());

  auto m = http_request("127.0.0.1", sys.port, "GET", "/metrics");
  REQUIRE(m.status == 200);
  CHECK(m.body.find("# TYPE pushonce_gateway_sessions gauge") != std::string::npos);
  CHECK(m.body.find("pushonce_redis_up") != std::string::npos);

  auto page = http_request("127.0.0.1", sys.port, "GET", "/");
  CHECK(page.status == 200);
  CHECK(page.body.find("<html") != std::string::npos);
  auto js = http_request("127.0.0.1", sys.port, "GET", "/pushonce.js");
  CHECK(js.status == 200);
  CHECK(js.body.find("export") != std::string::npos);
  CHECK(http_request("127.0.0.1", sys.port, "GET", "/admin").status == 200);
}

TEST_CASE("gateway features: a quiet open session keeps its user's inbox alive past the idle TTL") {
  // The inbox and offset counter of an idle user expire (here after 1.5 s); a user with an
  // open session is not idle: its gateway keeps them alive, so offsets go on from where the
  // session is instead of restarting at 1 in a new epoch (which the session would drop).
  system_under_test sys({}, true, {"--inbox-idle-ms", "1500"}, {"--inbox-idle-ms", "1500"});
  auto alice = sys.connect(R"({"op":"hello","user":"alice"})");
  REQUIRE_FALSE(next_of_type(*alice, "welcome").empty());
  CHECK(sys.cli({"publish", "alice", R"({"n":1})"}).exit_code == 0);
  auto m1 = next_of_type(*alice, "message");
  REQUIRE_FALSE(m1.empty());
  CHECK(m1.at("offset") == 1);
  observe_quiet(3500ms, "the inbox expiring: more than twice the idle TTL without traffic");
  CHECK(sys.cli({"publish", "alice", R"({"n":2})"}).exit_code == 0);
  auto m2 = next_of_type(*alice, "message");
  REQUIRE_FALSE(m2.empty());
  CHECK(m2.at("offset") == 2);
  CHECK(m2.at("data").at("n") == 2);
}

}  // namespace test_gateway_features_e2e
