// gateway/http/gate: the token of a request, the decision, the caches and the cookie.
#include <doctest/doctest.h>

#include "gateway/http/gate.hpp"

using namespace pushonce::gateway;
using pushonce::admission::claims;
using pushonce::admission::record;

namespace {

claims claims_of(std::string queue, long long exp_s) {
  claims c;
  c.iss = "pushonce";
  c.sub = "gwen";
  c.queue = std::move(queue);
  c.resource = "seat-1";
  c.jti = "4096016";
  c.iat = exp_s - 600;
  c.exp = exp_s;
  return c;
}

}  // namespace

TEST_CASE("gate: the token comes from the cookie, else a bearer header") {
  CHECK(gate_token_of("a=1; pushonce_admission=tok; b=2", "") == "tok");
  CHECK(gate_token_of("pushonce_admission=tok", "Bearer other") == "tok");
  CHECK(gate_token_of("", "Bearer  other ") == "other");
  CHECK_FALSE(gate_token_of("pushonce_admission=", ""));
  CHECK_FALSE(gate_token_of("xpushonce_admission=tok", "Basic abc"));
  CHECK_FALSE(gate_token_of("", ""));
}

TEST_CASE("gate: live passes (even past exp); ended, another queue, another user refused") {
  const long long now = 1800000000000;
  auto c = claims_of("default", now / 1000 + 60);
  record live{"accepted", "gwen", "seat-1", now + 30000};
  CHECK(gate_decide(c, "default", live, now).status == 204);
  CHECK(gate_decide(c, "default", live, now).renew);
  CHECK(gate_decide(c, "vip", live, now).status == 403);
  record released{"released", "gwen", "seat-1", std::nullopt};
  CHECK(gate_decide(c, "default", released, now).status == 403);
  record lapsed{"assigned", "gwen", "seat-1", now - 1};
  CHECK(gate_decide(c, "default", lapsed, now).status == 403);
  record other{"assigned", "mallory", "seat-1", std::nullopt};
  CHECK(gate_decide(c, "default", other, now).status == 403);
  CHECK(gate_decide(c, "default", std::nullopt, now).status == 403);
  auto old = claims_of("default", now / 1000 - 5);  // exp passed
  CHECK(gate_decide(old, "default", live, now).status == 204);
  CHECK(gate_decide(old, "default", std::nullopt, now).status == 401);
}

TEST_CASE("gate: states are fresh for a second; renewals go out once a second, latest time") {
  gate_states states(std::chrono::milliseconds(1000), 2);
  const auto t0 = gate_states::clock::now();
  states.put("1", record{"assigned", "a", "r", std::nullopt}, t0);
  CHECK(states.fresh("1", t0 + std::chrono::milliseconds(999)));
  CHECK_FALSE(states.fresh("1", t0 + std::chrono::milliseconds(1000)));
  states.put("2", std::nullopt, t0);
  auto none = states.fresh("2", t0);
  REQUIRE(none);
  CHECK_FALSE(*none);
  states.put("3", std::nullopt, t0);  // over capacity: bounded
  CHECK(states.fresh("3", t0));

  gate_renewals r;
  r.add("q", "1", 100);
  r.add("q", "1", 300);
  r.add("q", "2", 200);
  auto batch = r.take(t0);
  REQUIRE(batch.size() == 2);
  CHECK(batch[0].second == 300);
  r.add("q", "1", 400);
  CHECK(r.take(t0 + std::chrono::milliseconds(500)).empty());  // within the second
  CHECK(r.take(t0 + std::chrono::milliseconds(1000)).size() == 1);
}

TEST_CASE("gate: a verified token is cached by digest; a bad one is not") {
  // An HS256 verifier: tokens made with the same secret verify.
  pushonce::admission::verifier v({}, "gate-secret-0123456789abcdef0123456789");
  auto c = claims_of("default", 4102444800);
  auto good = pushonce::admission::signer::hs256("gate-secret-0123456789abcdef0123456789")->sign(c);
  gate_tokens tokens(2);
  CHECK_FALSE(tokens.cached(good));
  REQUIRE(tokens.claims_of(good, v));
  CHECK(tokens.verifications() == 1);
  REQUIRE(tokens.claims_of(good, v));
  CHECK(tokens.verifications() == 1);  // the second check: no verification
  CHECK(tokens.cached(good)->sub == "gwen");
  CHECK_FALSE(tokens.claims_of(good + "x", v));
  CHECK(tokens.size() == 1);
}

TEST_CASE("gate: the cookie's attributes and the same-origin rule") {
  CHECK(gate_cookie("t", false, "") ==
        "pushonce_admission=t; Path=/; HttpOnly; SameSite=Lax; Secure");
  CHECK(gate_cookie("t", true, "example.com") ==
        "pushonce_admission=t; Path=/; HttpOnly; SameSite=Lax; Domain=example.com");
  CHECK(gate_same_origin("https://shop.example:8443", "shop.example:8443"));
  CHECK(gate_same_origin("http://127.0.0.1:9000", "127.0.0.1:9000"));
  CHECK(gate_same_origin("https://Shop.Example:8443", "shop.example"));  // behind nginx
  CHECK(gate_same_origin("https://[::1]:8443", "[::1]"));
  CHECK_FALSE(gate_same_origin("https://shop.example.evil.com", "shop.example"));
  CHECK_FALSE(gate_same_origin("https://shop.example/x", "shop.example"));
  CHECK_FALSE(gate_same_origin("https://evil.example", "shop.example"));
  CHECK_FALSE(gate_same_origin("", "shop.example"));
  CHECK_FALSE(gate_same_origin("null", "shop.example"));
}
