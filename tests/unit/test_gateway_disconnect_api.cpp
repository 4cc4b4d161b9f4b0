// gateway/http/disconnect_api: POST /api/disconnect's body, the revocation's lifetime and
// the answer.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "core/disconnect.hpp"
#include "gateway/http/disconnect_api.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_disconnect_api_unit {

using namespace pushonce;
using namespace pushonce::gateway;
using namespace std::chrono_literals;

TEST_CASE("disconnect api: a body names a valid user and maybe revoke") {
  auto plain = parse_disconnect_body(R"({"user":"ada"})");
  REQUIRE(plain);
  CHECK(plain.value() == disconnect_body{"ada", false});
  auto rev = parse_disconnect_body(R"({"user":"ada","revoke":true})");
  REQUIRE(rev);
  CHECK(rev.value() == disconnect_body{"ada", true});
  auto no = parse_disconnect_body(R"({"revoke":false,"user":"bob"})");
  REQUIRE(no);
  CHECK(no.value() == disconnect_body{"bob", false});
  for (const char* bad : {"", "{", "[]", "null", R"({})", R"({"user":""})", R"({"user":"a b"})",
                          R"({"user":7})", R"({"user":"ada","revoke":"yes"})",
                          R"({"user":"ada","revoke":1})", R"({"user":"ada","for":10})"}) {
    auto r = parse_disconnect_body(bad);
    REQUIRE_MESSAGE(!r, bad);
    CHECK(r.error().code == errc::bad_request);
    CHECK_FALSE(r.error().message.empty());
  }
}

TEST_CASE("disconnect api: the revocation lasts the tokens' longest life, 24 h without one") {
  CHECK(revocation_lifetime(3600s, 30s) == 3630s);
  CHECK(revocation_lifetime(0s, 30s) == default_revocation_lifetime);
  CHECK(revocation_lifetime(std::chrono::seconds(10LL * 365 * 24 * 3600), 0s) ==
        max_revocation_lifetime);
}

TEST_CASE("disconnect api: the answer") {
  auto a = boost::json::parse(render_disconnect_answer("ada", 0)).as_object();
  CHECK(a.at("user") == "ada");
  CHECK(a.at("disconnected") == true);
  CHECK_FALSE(a.contains("revoked_until"));
  auto r = boost::json::parse(render_disconnect_answer("ada", 1234)).as_object();
  CHECK(r.at("revoked_until").as_int64() == 1234);
}

}  // namespace test_gateway_disconnect_api_unit
