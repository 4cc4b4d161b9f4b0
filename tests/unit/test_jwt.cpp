#include "core/jwt.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>
#include <jwt.h>

#include <cstdlib>
#include <string>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_jwt_unit {

using namespace pushonce;

namespace {

std::string b64url(const std::string& in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(tbl[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(tbl[((val << 8) >> (bits + 8)) & 0x3F]);
  return out;
}

long long now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string libjwt_token(jwt_alg_t alg, const std::string& key, const char* sub, long exp) {
  jwt_t* j = nullptr;
  jwt_new(&j);
  if (sub) jwt_add_grant(j, "sub", sub);
  jwt_add_grant_int(j, "exp", exp);
  jwt_set_alg(j, alg, reinterpret_cast<const unsigned char*>(key.data()),
              static_cast<int>(key.size()));
  char* s = jwt_encode_str(j);
  std::string out(s);
  std::free(s);
  jwt_free(j);
  return out;
}

}  // namespace

TEST_CASE("jwt: a minted token verifies to its user") {
  auto t = jwt::mint("alice", std::chrono::seconds(60), "secret");
  auto r = jwt::verify(t, "secret");
  REQUIRE(r.has_value());
  CHECK(r.value().user == "alice");
}

TEST_CASE("jwt: wrong signature, expired, missing and malformed tokens are refused") {
  auto t = jwt::mint("alice", std::chrono::seconds(60), "secret");
  CHECK_FALSE(jwt::verify(t, "other-secret").has_value());
  CHECK(jwt::verify(t, "other-secret").error().code == pushonce::errc::unauthorized);
  auto expired = libjwt_token(JWT_ALG_HS256, "secret", "alice", static_cast<long>(now_s() - 5));
  auto r = jwt::verify(expired, "secret");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message == "token expired");
  CHECK_FALSE(jwt::verify("", "secret").has_value());
  CHECK_FALSE(jwt::verify("not.a.token", "secret").has_value());
  CHECK_FALSE(jwt::verify(t, "").has_value());  // no secret configured: nothing verifies
  auto no_sub = libjwt_token(JWT_ALG_HS256, "secret", nullptr, static_cast<long>(now_s() + 60));
  CHECK_FALSE(jwt::verify(no_sub, "secret").has_value());
}

TEST_CASE("jwt: alg none and other algorithms are refused") {
  auto exp = std::to_string(now_s() + 60);
  auto none = b64url(R"({"alg":"none","typ":"JWT"})") + "." +
              b64url(R"({"sub":"alice","exp":)" + exp + "}") + ".";
  CHECK_FALSE(jwt::verify(none, "secret").has_value());
  auto none_no_dot = none.substr(0, none.size() - 1);
  CHECK_FALSE(jwt::verify(none_no_dot, "secret").has_value());
  auto hs512 = libjwt_token(JWT_ALG_HS512, "secret", "alice", static_cast<long>(now_s() + 60));
  auto r = jwt::verify(hs512, "secret");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == pushonce::errc::unauthorized);
}

namespace {

// An HS256 token with the given claims (a JSON object's text).
std::string token_with(const std::string& claims, const std::string& key = "secret") {
  jwt_t* j = nullptr;
  jwt_new(&j);
  jwt_add_grants_json(j, claims.c_str());
  jwt_set_alg(j, JWT_ALG_HS256, reinterpret_cast<const unsigned char*>(key.data()),
              static_cast<int>(key.size()));
  char* s = jwt_encode_str(j);
  std::string out(s);
  std::free(s);
  jwt_free(j);
  return out;
}

std::string claims(long long exp, const std::string& more = {}) {
  return R"({"sub":"alice","exp":)" + std::to_string(exp) + more + "}";
}

}  // namespace

TEST_CASE("jwt: exp and nbf with a leeway for clock skew; iat not in the future") {
  const long long now = 1'800'000'000;
  jwt::verify_options o;
  o.now = now;
  o.leeway = std::chrono::seconds(30);
  CHECK(jwt::verify(token_with(claims(now - 10)), "secret", o).has_value());  // within the leeway
  auto late = jwt::verify(token_with(claims(now - 30)), "secret", o);
  REQUIRE_FALSE(late.has_value());
  CHECK(late.error().message == "token expired");
  CHECK(
      jwt::verify(token_with(claims(now + 60, ",\"nbf\":" + std::to_string(now + 20))), "secret", o)
          .has_value());
  auto early = jwt::verify(token_with(claims(now + 600, ",\"nbf\":" + std::to_string(now + 31))),
                           "secret", o);
  REQUIRE_FALSE(early.has_value());
  CHECK(early.error().message == "token not valid yet (nbf)");
  auto future = jwt::verify(token_with(claims(now + 600, ",\"iat\":" + std::to_string(now + 300))),
                            "secret", o);
  REQUIRE_FALSE(future.has_value());
  CHECK(future.error().message == "token issued in the future (iat)");
  CHECK_FALSE(
      jwt::verify(token_with(claims(now + 60, R"(,"nbf":"soon")")), "secret", o).has_value());
  CHECK_FALSE(jwt::verify(token_with(R"({"sub":"alice","exp":"later"})"), "secret", o).has_value());
  o.leeway = std::chrono::seconds(0);
  CHECK_FALSE(jwt::verify(token_with(claims(now - 10)), "secret", o).has_value());
}

TEST_CASE("jwt: a required audience and issuer; a maximum lifetime") {
  const long long now = 1'800'000'000;
  jwt::verify_options o;
  o.now = now;
  o.audience = "pushonce";
  o.issuer = "https://id.example";
  auto iss = std::string(R"(,"iss":"https://id.example")");
  CHECK(jwt::verify(token_with(claims(now + 60, iss + R"(,"aud":"pushonce")")), "secret", o)
            .has_value());
  CHECK(
      jwt::verify(token_with(claims(now + 60, iss + R"(,"aud":["other","pushonce"])")), "secret", o)
          .has_value());
  auto aud = jwt::verify(token_with(claims(now + 60, iss + R"(,"aud":"other")")), "secret", o);
  REQUIRE_FALSE(aud.has_value());
  CHECK(aud.error().message == "token has the wrong aud");
  CHECK_FALSE(jwt::verify(token_with(claims(now + 60, iss)), "secret", o).has_value());  // no aud
  auto wrong_iss =
      jwt::verify(token_with(claims(now + 60, R"(,"iss":"https://evil.example","aud":"pushonce")")),
                  "secret", o);
  REQUIRE_FALSE(wrong_iss.has_value());
  CHECK(wrong_iss.error().message == "token has the wrong iss");

  jwt::verify_options life;
  life.now = now;
  life.max_lifetime = std::chrono::hours(24);
  CHECK(jwt::verify(token_with(claims(now + 3600)), "secret", life).has_value());
  auto year = jwt::verify(token_with(claims(now + 365LL * 86400)), "secret", life);
  REQUIRE_FALSE(year.has_value());
  CHECK(year.error().message == "token lives longer than the gateway accepts");
  // measured from iat when there is one
  CHECK_FALSE(jwt::verify(token_with(claims(now + 3600, ",\"iat\":" + std::to_string(now - 90000))),
                          "secret", life)
                  .has_value());
}

TEST_CASE("jwt: mint refuses a lifetime past ten years (the expiry would overflow)") {
  CHECK_THROWS_AS(jwt::mint("alice", std::chrono::seconds(9'000'000'000'000'000'000LL), "secret"),
                  std::invalid_argument);
  CHECK_THROWS_AS(jwt::mint("alice", jwt::max_ttl + std::chrono::seconds(1), "secret"),
                  std::invalid_argument);
  CHECK(jwt::verify(jwt::mint("alice", jwt::max_ttl, "secret"), "secret").has_value());
}

}  // namespace test_jwt_unit
