// End-to-end proof of work at join with the real programs: a queue with join_pow_bits set
// refuses joins without a valid solution (bad_request, with a fresh challenge), takes a
// valid one (issued by one gateway, used on another: the secret is shared through Redis),
// and refuses the same solution a second time.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "core/pow_challenge.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_join_pow_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

json::object next_frame(ws_client& c, std::string_view type) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto f = c.receive(200ms);
    if (!f) {
      if (c.closed()) break;
      continue;
    }
    auto v = json::parse(*f).as_object();
    if (v.at("type").as_string() == type) return v;
  }
  return {};
}

std::string solve(const json::object& challenge) {
  auto prefix = std::string(challenge.at("prefix").as_string());
  auto bits = static_cast<int>(challenge.at("bits").as_int64());
  for (long long n = 0;; ++n)
    if (pow_solves(prefix, std::to_string(n), bits)) return std::to_string(n);
}

std::string join_with(const json::object& challenge, const std::string& nonce) {
  return json::serialize(json::object{
      {"op", "join"}, {"pow", json::object{{"id", challenge.at("id")}, {"nonce", nonce}}}});
}

}  // namespace

TEST_CASE(
    "proof of work e2e: missing, wrong and reused solutions are refused with a fresh "
    "challenge; a valid one joins on another gateway") {
  deployment d("pow", "sys");
  d.start_leader();
  auto p1 = d.port_of(d.start_gateway({"--dev-auth"}));
  auto p2 = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  d.redis().cmd({"HSET", d.k().queue("default", "settings"), "join_pow_bits", "8"});

  ws_client a;
  a.connect("127.0.0.1", p1);
  REQUIRE(a.send(R"({"op":"hello","user":"alice"})"));
  auto welcome = next_frame(a, "welcome");
  REQUIRE(welcome.contains("challenge"));
  auto challenge = welcome.at("challenge").as_object();
  CHECK(challenge.at("bits").as_int64() == 8);

  // No solution: refused, with a fresh challenge.
  REQUIRE(a.send(R"({"op":"join"})"));
  auto refused = next_frame(a, "error");
  CHECK(refused.at("code") == "bad_request");
  CHECK(refused.at("op") == "join");
  REQUIRE(refused.contains("challenge"));
  CHECK(refused.at("challenge").as_object().at("id") != challenge.at("id"));
  // A nonce that does not solve it.
  std::string wrong;
  for (long long n = 0; wrong.empty(); ++n)
    if (!pow_solves(std::string(challenge.at("prefix").as_string()), std::to_string(n), 8))
      wrong = std::to_string(n);
  REQUIRE(a.send(join_with(challenge, wrong)));
  CHECK(next_frame(a, "error").at("code") == "bad_request");

  // Valid, issued by gateway 1, used on gateway 2.
  auto nonce = solve(challenge);
  ws_client b;
  b.connect("127.0.0.1", p2);
  REQUIRE(b.send(R"({"op":"hello","user":"alice"})"));
  REQUIRE_FALSE(next_frame(b, "welcome").empty());
  REQUIRE(b.send(join_with(challenge, nonce)));
  auto joined = next_frame(b, "joined");
  REQUIRE_FALSE(joined.empty());
  CHECK(joined.at("position").as_int64() == 1);

  // Leave, then the same solution again: reused, refused, counted.
  REQUIRE(b.send(R"({"op":"leave"})"));
  REQUIRE_FALSE(next_frame(b, "left").empty());
  REQUIRE(b.send(join_with(challenge, nonce)));
  auto reused = next_frame(b, "error");
  CHECK(reused.at("code") == "bad_request");
  CHECK(reused.contains("challenge"));
  CHECK(d.redis().integer({"ZCARD", d.k().queue("default", "waiting")}) == 0);
  // Another user cannot use alice's challenge either.
  ws_client c;
  c.connect("127.0.0.1", p1);
  REQUIRE(c.send(R"({"op":"hello","user":"bob"})"));
  REQUIRE_FALSE(next_frame(c, "welcome").empty());
  REQUIRE(c.send(join_with(challenge, nonce)));
  CHECK(next_frame(c, "error").at("code") == "bad_request");
  // Counted: missing, wrong, reused (join.lua) and bob's (the gateway's, not awaited).
  CHECK(wait_until(
      [&] {
        auto n = d.redis().text({"HGET", d.k().queue("default", "stats"), "refused_pow"});
        return !n.empty() && std::stoll(n) == 4;
      },
      5s));
  // Off again: joins need nothing once the gateway read the settings again (its cache
  // holds them a second); until then a join is refused, and asked again.
  d.redis().cmd({"HDEL", d.k().queue("default", "settings"), "join_pow_bits"});
  CHECK(wait_until(
      [&] {
        REQUIRE(c.send(R"({"op":"join"})"));
        for (auto f = c.receive(5s); f; f = c.receive(5s)) {
          auto type = json::parse(*f).at("type").as_string();
          if (type == "joined") return true;
          if (type == "error") return false;
        }
        return false;
      },
      5s, 300ms, 300ms));  // joins at a steady pace, under the gateway's limit of 5 a second
}

}  // namespace test_join_pow_e2e
