#include "core/jwt.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>
#include <jwt.h>

#include <cstdlib>
#include <string>

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
  REQUIRE(r.ok());
  CHECK(r.value() == "alice");
}

TEST_CASE("jwt: wrong signature, expired, missing and malformed tokens are refused") {
  auto t = jwt::mint("alice", std::chrono::seconds(60), "secret");
  CHECK_FALSE(jwt::verify(t, "other-secret").ok());
  CHECK(jwt::verify(t, "other-secret").error().code == "unauthorized");
  auto expired = libjwt_token(JWT_ALG_HS256, "secret", "alice", static_cast<long>(now_s() - 5));
  auto r = jwt::verify(expired, "secret");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "token expired");
  CHECK_FALSE(jwt::verify("", "secret").ok());
  CHECK_FALSE(jwt::verify("not.a.token", "secret").ok());
  CHECK_FALSE(jwt::verify(t, "").ok());  // no secret configured: nothing verifies
  auto no_sub = libjwt_token(JWT_ALG_HS256, "secret", nullptr, static_cast<long>(now_s() + 60));
  CHECK_FALSE(jwt::verify(no_sub, "secret").ok());
}

TEST_CASE("jwt: alg none and other algorithms are refused") {
  auto exp = std::to_string(now_s() + 60);
  auto none = b64url(R"({"alg":"none","typ":"JWT"})") + "." +
              b64url(R"({"sub":"alice","exp":)" + exp + "}") + ".";
  CHECK_FALSE(jwt::verify(none, "secret").ok());
  auto none_no_dot = none.substr(0, none.size() - 1);
  CHECK_FALSE(jwt::verify(none_no_dot, "secret").ok());
  auto hs512 = libjwt_token(JWT_ALG_HS512, "secret", "alice", static_cast<long>(now_s() + 60));
  auto r = jwt::verify(hs512, "secret");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "unauthorized");
}
