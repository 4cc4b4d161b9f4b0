// End-to-end: token refresh and expiry on live WebSocket sessions with the real programs
// (docs/protocol.md "Token refresh and expiry"). Tokens of a few seconds and a gateway with
// --jwt-leeway 0: a session that refreshes stays open and receives every message once
// across its refreshes; one that does not is closed 1008 "token expired"; a refresh for
// another user, or with a token that does not verify, is refused and the session stays on
// its own token until that one runs out.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "core/jwt.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_token_refresh_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* refresh_secret = "refresh-test-secret-0123456789abcdef";

struct refresh_system : deployment {
  refresh_system() : deployment("refresh", "sys", {{"PUSHONCE_JWT_SECRET", refresh_secret}}) {
    start_leader();
    start_worker();
    port = port_of(start_gateway({"--jwt-leeway", "0"}));
    REQUIRE_MESSAGE(wait_ready(), ready_failure());
  }
  std::unique_ptr<ws_client> hello(const std::string& user, std::chrono::seconds ttl) {
    auto c = std::make_unique<ws_client>();
    c->connect("127.0.0.1", port);
    REQUIRE(c->send(json::serialize(
        json::object{{"op", "hello"}, {"token", jwt::mint(user, ttl, refresh_secret)}})));
    auto w = c->receive(5s);
    REQUIRE(w);
    REQUIRE(w->find("\"welcome\"") != std::string::npos);
    return c;
  }
  void publish(const std::string& user, int n) {
    auto r = admin({"publish", user, R"({"n":)" + std::to_string(n) + "}", "--json"}, {}, 10s);
    REQUIRE_MESSAGE(r.code() == 0, r.describe());
  }
  std::uint16_t port = 0;
};

std::string refresh_frame(const std::string& token) {
  return json::serialize(json::object{{"op", "refresh"}, {"token", token}});
}

// The next frame of a type (others are handed to `other`), or an empty object.
template <typename F>
json::object refresh_next_of_type(ws_client& c, std::string_view type, F&& other,
                                  std::chrono::milliseconds t = 5s) {
  auto deadline = std::chrono::steady_clock::now() + t;
  while (std::chrono::steady_clock::now() < deadline) {
    auto f = c.receive(100ms);
    if (!f) {
      if (c.closed()) break;
      continue;
    }
    auto v = json::parse(*f).as_object();
    if (v.at("type").as_string() == type) return v;
    other(v);
  }
  return {};
}

json::object refresh_next_of_type(ws_client& c, std::string_view type) {
  return refresh_next_of_type(c, type, [](const json::object&) {});
}

// The session is still open and answering.
bool refresh_answers_ping(ws_client& c) {
  if (!c.send(R"({"op":"ping"})")) return false;
  return !refresh_next_of_type(c, "pong").empty();
}

}  // namespace

TEST_CASE("token refresh: a session that refreshes stays open; every message once across it") {
  refresh_system sys;
  auto c = sys.hello("rita", 3s);
  std::map<long long, int> offsets;  // offset -> times received
  std::map<std::string, int> ids;
  auto take = [&](const json::object& f) {
    if (f.at("type").as_string() != "message") return;
    ++offsets[f.at("offset").as_int64()];
    ++ids[std::string(f.at("id").as_string())];
  };
  // 8 s with a 3 s token: refreshed every second, a message published between refreshes.
  const int rounds = 8;
  for (int i = 1; i <= rounds; ++i) {
    sys.publish("rita", i);
    REQUIRE(c->send(refresh_frame(jwt::mint("rita", 3s, refresh_secret))));
    auto r = refresh_next_of_type(*c, "refreshed", take);
    REQUIRE_MESSAGE(!r.empty(), "no refreshed; closed ", c->close_code().value_or(0), " ",
                    c->close_reason());
    CHECK(r.at("exp").as_int64() > 0);
    auto until = std::chrono::steady_clock::now() + 1s;
    while (std::chrono::steady_clock::now() < until)
      if (auto f = c->receive(100ms)) take(json::parse(*f).as_object());
    REQUIRE_FALSE(c->closed());
  }
  for (auto f : c->drain(500ms)) take(json::parse(f).as_object());
  CHECK_FALSE(c->closed());
  CHECK(offsets.size() == rounds);
  for (long long o = 1; o <= rounds; ++o) CHECK_MESSAGE(offsets[o] == 1, "offset ", o);
  for (const auto& [id, n] : ids) CHECK_MESSAGE(n == 1, "id ", id);
}

TEST_CASE("token refresh: a session that does not refresh is closed 1008 token expired") {
  refresh_system sys;
  auto c = sys.hello("tom", 2s);
  CHECK(refresh_answers_ping(*c));
  CHECK(c->wait_closed(10s));
  CHECK(c->close_code() == 1008);
  CHECK(c->close_reason() == "token expired");
  auto m = http_request("127.0.0.1", sys.port, "GET", "/metrics");
  auto at = m.body.find("pushonce_gateway_token_expiry_closes_total{gateway=");
  REQUIRE(at != std::string::npos);
  auto line = m.body.substr(at, m.body.find('\n', at) - at);
  CHECK_MESSAGE(line.ends_with("} 1"), line);
}

TEST_CASE("token refresh: another user's token is refused; the session stays on its own") {
  refresh_system sys;
  auto c = sys.hello("ursula", 3s);
  REQUIRE(c->send(refresh_frame(jwt::mint("mallory", 60s, refresh_secret))));
  auto e = refresh_next_of_type(*c, "error");
  REQUIRE_FALSE(e.empty());
  CHECK(e.at("code") == "bad_request");
  CHECK(e.at("op") == "refresh");
  CHECK(refresh_answers_ping(*c));
  // it still ends at its own token's exp, not mallory's
  CHECK(c->wait_closed(10s));
  CHECK(c->close_code() == 1008);
  CHECK(c->close_reason() == "token expired");
}

TEST_CASE("token refresh: an expired or badly signed token is refused; the session stays") {
  refresh_system sys;
  auto c = sys.hello("vera", 3s);
  const std::string bad[] = {
      jwt::mint("vera", -60s, refresh_secret),                        // expired
      jwt::mint("vera", 60s, "another-secret-0123456789abcdefghij"),  // wrong signature
      "not.a.jwt",
  };
  for (const auto& t : bad) {
    REQUIRE(c->send(refresh_frame(t)));
    auto e = refresh_next_of_type(*c, "error");
    REQUIRE_FALSE(e.empty());
    CHECK(e.at("code") == "bad_request");
    CHECK(e.at("op") == "refresh");
    CHECK(std::string(e.at("message").as_string()).find("refused") != std::string::npos);
  }
  CHECK(refresh_answers_ping(*c));
  CHECK(c->wait_closed(10s));
  CHECK(c->close_code() == 1008);
  CHECK(c->close_reason() == "token expired");
}

TEST_CASE("token refresh: a --dev-auth session without a token follows the token it refreshes to") {
  deployment d("refresh", "dev", {{"PUSHONCE_JWT_SECRET", refresh_secret}});
  auto port = d.port_of(d.start_gateway({"--dev-auth", "--jwt-leeway", "0"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  ws_client c;
  c.connect("127.0.0.1", port);
  REQUIRE(c.send(R"({"op":"hello","user":"wanda"})"));
  REQUIRE_FALSE(refresh_next_of_type(c, "welcome").empty());
  REQUIRE(c.send(refresh_frame(jwt::mint("xavier", 60s, refresh_secret))));
  CHECK(refresh_next_of_type(c, "error").at("code") == "bad_request");  // another user
  REQUIRE(c.send(refresh_frame(jwt::mint("wanda", 2s, refresh_secret))));
  CHECK_FALSE(refresh_next_of_type(c, "refreshed").empty());
  CHECK(c.wait_closed(10s));
  CHECK(c.close_code() == 1008);
  CHECK(c.close_reason() == "token expired");
}

}  // namespace test_token_refresh_e2e
