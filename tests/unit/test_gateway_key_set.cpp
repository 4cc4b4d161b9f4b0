// gateway/auth/key_set: JWKS parsing, RS256 and ES256 tokens, kid, algorithm confusion.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "gateway/auth/key_set.hpp"
#include "tests/support/signing_keys.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_key_set_unit {

using namespace pushonce::gateway;
using pushonce::test::key_set_json;
using pushonce::test::signing_key;

namespace {

std::string claims(long long exp_from_now = 600) {
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  return R"({"sub":"ada","exp":)" + std::to_string(now + exp_from_now) + "}";
}

}  // namespace

TEST_CASE("key_set: RS256 and ES256 tokens verify by kid; the claims are checked") {
  signing_key rsa("RSA", "r1"), ec("EC", "e1");
  auto set = key_set::parse(key_set_json({&rsa, &ec}));
  CHECK(set->size() == 2);
  pushonce::jwt::verify_options o;
  auto r = set->verify(rsa.sign(claims()), o);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  CHECK(r.value().user == "ada");
  auto e = set->verify(ec.sign(claims()), o);
  REQUIRE_MESSAGE(e.has_value(), e.error().message);
  auto expired = set->verify(rsa.sign(claims(-100)), o);
  REQUIRE_FALSE(expired.has_value());
  CHECK(expired.error().message == "token expired");
  // a token without kid: only a set of one key knows which
  CHECK_FALSE(set->verify(rsa.sign(claims(), false), o).has_value());
  CHECK(key_set::parse(key_set_json({&rsa}))->verify(rsa.sign(claims(), false), o).has_value());
}

TEST_CASE("key_set: unknown keys, another key's signature, and algorithm confusion are refused") {
  signing_key rsa("RSA", "r1"), other("RSA", "r1"), ec("EC", "e1");
  auto set = key_set::parse(key_set_json({&rsa, &ec}));
  pushonce::jwt::verify_options o;
  auto forged = set->verify(other.sign(claims()), o);  // same kid, another key
  REQUIRE_FALSE(forged.has_value());
  CHECK(forged.error().message.find("bad signature") != std::string::npos);
  signing_key stranger("EC", "nobody");
  CHECK(set->verify(stranger.sign(claims()), o).error().message.find("unknown key") !=
        std::string::npos);
  // an ES256 token that names the RSA key's kid
  signing_key liar("EC", "r1");
  CHECK(set->verify(liar.sign(claims()), o).error().message.find("must be RS256") !=
        std::string::npos);
  // "alg":"none" and HS256 with kid r1: never checked against the public key
  auto none = pushonce::test::b64url(R"({"alg":"none","kid":"r1"})") + "." +
              pushonce::test::b64url(claims()) + ".";
  CHECK_FALSE(set->verify(none, o).has_value());
  auto hs = pushonce::test::b64url(R"({"alg":"HS256","typ":"JWT","kid":"r1"})") + "." +
            pushonce::test::b64url(claims()) + ".AAAA";
  CHECK(set->verify(hs, o).error().message.find("must be RS256") != std::string::npos);
  CHECK(token_alg(hs) == "HS256");
  CHECK(token_alg("garbage") == "");
}

TEST_CASE("key_set: documents that are not a usable key set are refused with the reason") {
  CHECK_THROWS_AS(key_set::parse("[]"), std::invalid_argument);
  CHECK_THROWS_AS(key_set::parse(R"({"keys":[]})"), std::invalid_argument);
  CHECK_THROWS_AS(key_set::parse(R"({"keys":[{"kty":"oct","k":"c2VjcmV0"}]})"),
                  std::invalid_argument);  // no public key: nothing usable
  CHECK_THROWS_WITH(key_set::parse(R"({"keys":[{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"}]})"),
                    doctest::Contains("2048"));
  CHECK_THROWS_WITH(
      key_set::parse(R"({"keys":[{"kty":"EC","crv":"P-384","kid":"b","x":"AA","y":"AA"}]})"),
      doctest::Contains("P-256"));
  CHECK_THROWS_AS(key_set::load("/nonexistent/jwks.json"), std::invalid_argument);
  signing_key rsa("RSA", "r1");
  // an encryption key is skipped; the signing one is kept
  auto set = key_set::parse(R"({"keys":[{"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"},)" +
                            rsa.jwk() + "]}");
  CHECK(set->size() == 1);
}

}  // namespace test_gateway_key_set_unit
