#include "core/pow_challenge.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "gateway/protocol/protocol.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_pow_challenge_unit {

using pushonce::leading_zero_bits;
using pushonce::pow_challenge;
using pushonce::pow_gate;
using pushonce::pow_solution;
using pushonce::pow_solves;
using pushonce::pow_verdict;

namespace {

constexpr long long t0 = 1'700'000'000'000;
const std::string rnd = "00112233445566778899aabb";

// The first nonce (decimal) that solves the challenge.
std::string solve(const pow_challenge& c) {
  for (long long n = 0;; ++n)
    if (pow_solves(c.prefix, std::to_string(n), c.bits)) return std::to_string(n);
}

}  // namespace

TEST_CASE("pow: leading zero bits of a digest") {
  unsigned char a[] = {0x00, 0x00, 0x0f, 0xff};
  CHECK(leading_zero_bits(a, 4) == 20);
  unsigned char b[] = {0x80};
  CHECK(leading_zero_bits(b, 1) == 0);
  unsigned char c[] = {0x01, 0xff};
  CHECK(leading_zero_bits(c, 2) == 7);
  unsigned char z[] = {0, 0};
  CHECK(leading_zero_bits(z, 2) == 16);
  // SHA-256("abc") starts ba78...: no leading zero bit.
  CHECK(pow_solves("ab", "c", 0));
  CHECK_FALSE(pow_solves("ab", "c", 1));
}

TEST_CASE("pow: a challenge issued is solved and verifies for its user and queue only") {
  pow_gate g("secret-1", std::chrono::milliseconds(60'000));
  auto c = g.issue("alice", "default", 8, t0, rnd);
  CHECK(c.bits == 8);
  CHECK(c.expires_at == t0 + 60'000);
  CHECK(c.prefix == c.id + ".");
  CHECK(c.id.rfind(std::to_string(t0 + 60'000) + ".8." + rnd + ".", 0) == 0);
  auto nonce = solve(c);
  auto ok = g.verify("alice", "default", 8, pow_solution{c.id, nonce}, t0 + 1000);
  CHECK(ok.ok());
  CHECK(ok.token == rnd);
  CHECK(ok.ttl_ms == 60'000 - 1000 + 1000);
  // Another user, queue or secret: forged.
  CHECK(g.verify("bob", "default", 8, pow_solution{c.id, nonce}, t0).verdict ==
        pow_verdict::forged);
  CHECK(g.verify("alice", "other", 8, pow_solution{c.id, nonce}, t0).verdict ==
        pow_verdict::forged);
  pow_gate other("secret-2");
  CHECK(other.verify("alice", "default", 8, pow_solution{c.id, nonce}, t0).verdict ==
        pow_verdict::forged);
  // Edited bits (an easier challenge claimed): the MAC covers them.
  auto easier = c.id;
  easier.replace(easier.find(".8."), 3, ".1.");
  CHECK(g.verify("alice", "default", 1, pow_solution{easier, nonce}, t0).verdict ==
        pow_verdict::forged);
}

TEST_CASE("pow: missing, expired, too easy, unsolved, malformed") {
  pow_gate g("secret-1", std::chrono::milliseconds(1000));
  auto c = g.issue("alice", "q", 4, t0, rnd);
  auto nonce = solve(c);
  CHECK(g.verify("alice", "q", 4, std::nullopt, t0).verdict == pow_verdict::missing);
  CHECK(g.verify("alice", "q", 4, pow_solution{c.id, nonce}, t0 + 1000).verdict ==
        pow_verdict::expired);
  CHECK(g.verify("alice", "q", 5, pow_solution{c.id, nonce}, t0).verdict == pow_verdict::too_easy);
  // A nonce that does not solve it (the first that fails).
  std::string bad;
  for (long long n = 0;; ++n)
    if (!pow_solves(c.prefix, std::to_string(n), 4)) {
      bad = std::to_string(n);
      break;
    }
  CHECK(g.verify("alice", "q", 4, pow_solution{c.id, bad}, t0).verdict == pow_verdict::unsolved);
  for (const std::string& id : std::vector<std::string>{
           "", ".", "...", "a.b.c.d", "1.4.zz.00", c.id + ".x", c.id + "0",
           "99999999999999999.4." + rnd + ".00112233445566778899aabbccddeeff",
           "1.33." + rnd + ".00112233445566778899aabbccddeeff",
           "1.0." + rnd + ".00112233445566778899aabbccddeeff", std::string(200, '1')})
    CHECK_MESSAGE(
        g.verify("alice", "q", 4, pow_solution{id, nonce}, t0).verdict == pow_verdict::malformed,
        id);
  CHECK(g.verify("alice", "q", 4, pow_solution{c.id, ""}, t0).verdict == pow_verdict::malformed);
  CHECK(g.verify("alice", "q", 4, pow_solution{c.id, std::string(65, 'a')}, t0).verdict ==
        pow_verdict::malformed);
  for (auto v : {pow_verdict::missing, pow_verdict::malformed, pow_verdict::forged,
                 pow_verdict::expired, pow_verdict::too_easy, pow_verdict::unsolved})
    CHECK_FALSE(pushonce::pow_reason(v).empty());
}

TEST_CASE("pow: the join frame's pow, the welcome's challenge and the refusal frame") {
  using namespace pushonce::gateway;
  namespace json = boost::json;
  auto r = parse_client_frame(R"({"op":"join","queue":"q","pow":{"id":"I","nonce":"N"}})");
  auto& j = std::get<join_op>(std::get<client_op>(r));
  REQUIRE(j.pow);
  CHECK(j.pow->id == "I");
  CHECK(j.pow->nonce == "N");
  auto plain = parse_client_frame(R"({"op":"join"})");
  CHECK_FALSE(std::get<join_op>(std::get<client_op>(plain)).pow);
  // A pow of the wrong shape is kept, empty: the verdict is malformed (with a challenge).
  for (auto text : {R"({"op":"join","pow":1})", R"({"op":"join","pow":{"id":1,"nonce":"x"}})",
                    R"({"op":"join","pow":[]})"}) {
    auto w = parse_client_frame(text);
    auto& wj = std::get<join_op>(std::get<client_op>(w));
    REQUIRE(wj.pow);
    CHECK(wj.pow->nonce.empty());
  }
  pow_challenge c{"ID", "ID.", 20, 123};
  auto welcome = json::parse(render_welcome("u", "s", "e", 0, true, &c)).as_object();
  CHECK(welcome.at("challenge").as_object() ==
        json::object{{"id", "ID"}, {"prefix", "ID."}, {"bits", 20}, {"expires_at", 123}});
  auto none = json::parse(render_welcome("u", "s", "e", 0, true)).as_object();
  CHECK_FALSE(none.contains("challenge"));
  auto refusal = json::parse(render_pow_refusal("expired", c)).as_object();
  CHECK(refusal.at("type") == "error");
  CHECK(refusal.at("code") == "bad_request");
  CHECK(refusal.at("op") == "join");
  CHECK(refusal.at("challenge").as_object().at("bits") == 20);
}

}  // namespace test_pow_challenge_unit
