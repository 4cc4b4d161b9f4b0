// End-to-end tests of POST /api/disconnect and `pushonce-leader disconnect` with two real
// gateways on one redis-server: every session of the user is closed on both (1008
// "disconnected") within the protocol's 1 s; with revoke, the old token is refused on both
// and on a gateway started after the revocation, and a token issued later is accepted.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/jwt.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_disconnect_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* secret = "disconnect-test-secret-0123456789abcdef";
constexpr const char* api_key = "disconnect-api-key-1";

struct two_gateways : deployment {
  explicit two_gateways(const std::string& what)
      : deployment("disc", what, {{"PUSHONCE_JWT_SECRET", secret}, {"PUSHONCE_API_KEY", api_key}}) {
    start_leader();
    start_worker();
    ports.push_back(port_of(start_gateway()));
    ports.push_back(port_of(start_gateway()));
    REQUIRE_MESSAGE(wait_ready(), ready_failure());
    REQUIRE(wait_subscribers(k().plain("control"), 2));
  }
  std::unique_ptr<ws_client> connect(std::uint16_t port, const std::string& token) {
    auto c = std::make_unique<ws_client>();
    c->connect("127.0.0.1", port);
    REQUIRE(c->send(json::serialize(json::object{{"op", "hello"}, {"token", token}})));
    return c;
  }
  http_reply post(const std::string& body, bool with_key = true) {
    headers h{{"Content-Type", "application/json"}};
    if (with_key) h.push_back({"Authorization", bearer(api_key)});
    return http_request("127.0.0.1", ports[0], "POST", "/api/disconnect", body, h);
  }
  std::vector<std::uint16_t> ports;
};

bool welcomed(ws_client& c) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto f = c.receive(200ms);
    if (!f) {
      if (c.closed()) return false;
      continue;
    }
    auto v = json::parse(*f).as_object();
    if (v.at("type") == "welcome") return true;
  }
  return false;
}

void check_disconnected(ws_client& c) {
  CHECK(c.wait_closed(5s));
  CHECK(c.close_code() == 1008);
  CHECK(c.close_reason() == "disconnected");
}

void check_refused(two_gateways& sys, std::uint16_t port, const std::string& token) {
  auto c = sys.connect(port, token);
  CHECK(c->wait_closed(5s));
  CHECK(c->close_code() == 1008);
  CHECK(c->close_reason() == "revoked");
}

// A token minted now has iat = this second: wait for the next second so that it is issued
// after a revocation made before this call.
void next_second() {
  const auto next = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) + 1s;
  wait_for(
      "the next second of the wall clock",
      [&] { return std::chrono::system_clock::now() >= next + 10ms; }, 2s, 10ms);
}

}  // namespace

TEST_CASE(
    "disconnect: the API closes the user's sessions on both gateways; without revoke "
    "the user reconnects") {
  two_gateways sys("api");
  auto token = jwt::mint("ada", 600s, secret);
  auto a = sys.connect(sys.ports[0], token);
  auto b = sys.connect(sys.ports[1], token);
  auto other = sys.connect(sys.ports[1], jwt::mint("bob", 600s, secret));
  REQUIRE(welcomed(*a));
  REQUIRE(welcomed(*b));
  REQUIRE(welcomed(*other));

  auto r = sys.post(R"({"user":"ada"})");
  REQUIRE_MESSAGE(r.status == 200, r.body);
  auto o = json::parse(r.body).as_object();
  CHECK(o.at("user") == "ada");
  CHECK(o.at("disconnected") == true);
  check_disconnected(*a);
  check_disconnected(*b);
  CHECK_FALSE(other->closed());

  // Not revoked: the same token opens a session again, on either gateway.
  auto again = sys.connect(sys.ports[1], token);
  CHECK(welcomed(*again));

  // An unknown user: nothing to close, still disconnected:true.
  auto unknown = sys.post(R"({"user":"nobody-here"})");
  CHECK(unknown.status == 200);

  // No key: 401; bad bodies: 400, and nothing is closed.
  CHECK(sys.post(R"({"user":"ada"})", false).status == 401);
  for (const char* bad : {"", "[]", R"({"user":""})", R"({"user":"a b"})",
                          R"({"user":"ada","revoke":"yes"})", R"({"user":"ada","extra":1})", "{"}) {
    auto res = sys.post(bad);
    CHECK_MESSAGE(res.status == 400, bad, " ", res.body);
  }
  CHECK_FALSE(again->closed());
  CHECK_FALSE(other->closed());
}

TEST_CASE(
    "disconnect: revoke refuses the old token on both gateways and on a gateway started "
    "later; a newer token is accepted") {
  two_gateways sys("revoke");
  auto old_token = jwt::mint("ada", 600s, secret);
  auto a = sys.connect(sys.ports[0], old_token);
  REQUIRE(welcomed(*a));

  auto r = sys.post(R"({"user":"ada","revoke":true})");
  REQUIRE_MESSAGE(r.status == 200, r.body);
  auto o = json::parse(r.body).as_object();
  CHECK(o.at("disconnected") == true);
  CHECK(o.at("revoked_until").as_int64() > 0);
  check_disconnected(*a);
  check_refused(sys, sys.ports[0], old_token);
  check_refused(sys, sys.ports[1], old_token);
  // Other users are not affected.
  auto bob = sys.connect(sys.ports[1], jwt::mint("bob", 600s, secret));
  CHECK(welcomed(*bob));

  // A gateway started after the revocation loads it at start.
  auto late = sys.port_of(sys.start_gateway());
  REQUIRE(sys.wait_subscribers(sys.k().plain("control"), 3));
  check_refused(sys, late, old_token);

  next_second();
  auto fresh = jwt::mint("ada", 600s, secret);
  for (auto port : {sys.ports[0], sys.ports[1], late}) {
    auto c = sys.connect(port, fresh);
    CHECK(welcomed(*c));
  }

  // A session on a newer token cannot refresh to the revoked one: it keeps its token.
  auto c = sys.connect(sys.ports[0], fresh);
  REQUIRE(welcomed(*c));
  REQUIRE(c->send(json::serialize(json::object{{"op", "refresh"}, {"token", old_token}})));
  std::optional<json::object> answer;
  for (int i = 0; i < 25 && !answer; ++i)
    if (auto f = c->receive(200ms)) answer = json::parse(*f).as_object();
  REQUIRE(answer);
  CHECK(answer->at("type") == "error");
  CHECK(answer->at("code") == "bad_request");
  CHECK_FALSE(c->closed());
}

TEST_CASE(
    "disconnect: a gateway whose subscriber missed the broadcast refuses once it "
    "reconnects") {
  two_gateways sys("missed");
  auto old_token = jwt::mint("ada", 600s, secret);
  auto a = sys.connect(sys.ports[1], old_token);
  REQUIRE(welcomed(*a));
  // A revocation no gateway heard (as if every subscriber was down when it was published):
  // written as revoke.lua writes it, without the broadcast.
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  const auto key = sys.k().ns() + ":{revoked}";
  sys.redis().cmd({"HSET", key, "ada", std::to_string(now) + ":" + std::to_string(now + 60'000)});
  // Not heard: the session stays open and the old token is still accepted.
  CHECK_FALSE(a->closed());
  // The subscribers reconnect and read the revocations again.
  sys.redis().cmd({"CLIENT", "KILL", "TYPE", "pubsub"});
  REQUIRE(sys.wait_subscribers(sys.k().plain("control"), 2));
  for (auto port : sys.ports) {
    bool refused = wait_until(
        [&] {
          auto c = sys.connect(port, old_token);
          return c->wait_closed(2s) && c->close_reason() == "revoked";
        },
        10s, 100ms);
    CHECK_MESSAGE(refused, "gateway on port ", port, " still accepts the revoked token");
  }
}

TEST_CASE(
    "disconnect: a revocation whose broadcast a gateway missed closes the user's sessions "
    "there when the next snapshot is read") {
  two_gateways sys("missed");
  auto kim = sys.connect(sys.ports[0], jwt::mint("kim", 600s, secret));
  auto lou = sys.connect(sys.ports[0], jwt::mint("lou", 600s, secret));
  REQUIRE(welcomed(*kim));
  REQUIRE(welcomed(*lou));
  // kim is revoked as revoke.lua records it, but no gateway hears a broadcast (as for a
  // gateway whose subscriber was away, or sessions opened before the first snapshot).
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  sys.redis().cmd({"HSET", sys.ns() + ":{revoked}", "kim",
                   std::to_string(now) + ":" + std::to_string(now + 86'400'000)});
  // The gateway's subscriber connection drops; it reconnects and reads the snapshot again.
  const std::string name = "name=pushonce-gateway:" + sys.id_of(sys.get(deployment::kind::gateway));
  auto list = sys.redis().text({"CLIENT", "LIST"});
  std::string killed;
  for (std::size_t pos = 0; (pos = list.find(name + " ", pos)) != std::string::npos; ++pos) {
    auto start = list.rfind('\n', pos);
    auto line = list.substr(start == std::string::npos ? 0 : start + 1, pos - start);
    auto sub = list.find(" sub=", pos);
    if (sub == std::string::npos || std::atoi(list.c_str() + sub + 5) < 1) continue;
    auto id = line.substr(line.find("id=") + 3);
    killed = id.substr(0, id.find(' '));
  }
  REQUIRE_FALSE(killed.empty());
  sys.redis().cmd({"CLIENT", "KILL", "ID", killed});
  check_disconnected(*kim);
  CHECK_FALSE(lou->closed());
}

TEST_CASE("disconnect: the leader CLI disconnects and revokes; bad input exits 2") {
  two_gateways sys("cli");
  auto old_token = jwt::mint("ada", 600s, secret);
  auto a = sys.connect(sys.ports[0], old_token);
  auto b = sys.connect(sys.ports[1], old_token);
  REQUIRE(welcomed(*a));
  REQUIRE(welcomed(*b));

  auto out = sys.admin_json({"disconnect", "ada"});
  CHECK(out.at("disconnected") == true);
  check_disconnected(*a);
  check_disconnected(*b);

  auto c = sys.connect(sys.ports[1], old_token);
  REQUIRE(welcomed(*c));
  auto rev = sys.admin_json({"disconnect", "ada", "--revoke", "--for", "60"});
  CHECK(rev.at("revoked_until").as_int64() > 0);
  check_disconnected(*c);
  check_refused(sys, sys.ports[0], old_token);
  // The revocation is kept for --for seconds, no longer.
  auto ttl = sys.redis().integer({"PTTL", sys.k().ns() + ":{revoked}"});
  CHECK(ttl > 0);
  CHECK(ttl <= 60'000);

  CHECK(sys.admin({"disconnect", "a b", "--json"}).code() == 2);
  CHECK(sys.admin({"disconnect", "--json"}).code() == 2);
  CHECK(sys.admin({"disconnect", "ada", "--for", "10", "--json"}).code() == 2);
  CHECK(sys.admin({"disconnect", "ada", "--revoke", "--for", "0", "--json"}).code() == 2);
}

}  // namespace test_disconnect_e2e
