#include "gateway/protocol/http_error.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <string>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_http_error_unit {

using namespace pushonce;
using namespace pushonce::gateway;

TEST_CASE("http error: the status and the body's code of each errc (docs/protocol.md)") {
  auto is = [](errc e, unsigned status, std::string_view code) {
    auto s = http_status_of(e);
    CAPTURE(code_text(e));
    CHECK(s.status == status);
    CHECK(s.code == code);
  };
  is(errc::bad_request, 400, "bad_request");
  is(errc::unauthorized, 401, "unauthorized");
  is(errc::forbidden, 403, "forbidden");
  is(errc::not_found, 404, "not_found");
  is(errc::too_large, 413, "too_large");
  is(errc::rate_limited, 429, "rate_limited");
  // Redis down or refusing work, the gateway over its limits: try again shortly.
  is(errc::redis_unavailable, 503, "unavailable");
  is(errc::overloaded, 503, "unavailable");
  is(errc::internal, 500, "internal");
  is(errc::fenced, 500, "internal");
  is(errc::already_queued, 500, "internal");
}

TEST_CASE("http error: the JSON body, byte for byte") {
  CHECK(error_json(errc::too_large, "the body is over 1 MiB") ==
        R"({"error":"too_large","message":"the body is over 1 MiB"})");
  CHECK(error_json(errc::redis_unavailable, "Redis did not answer: x") ==
        R"({"error":"unavailable","message":"Redis did not answer: x"})");
  CHECK(error_json(errc::not_found, "say \"hi\"") ==
        R"({"error":"not_found","message":"say \"hi\""})");
  auto a = error_answer(errc::rate_limited, "over the API key's rate limit; retry after 1 s");
  CHECK(a.status == 429);
  CHECK(a.body ==
        R"({"error":"rate_limited","message":"over the API key's rate limit; retry after 1 s"})");
}

TEST_CASE("http error: every errc answers a status and valid JSON") {
  for (int i = 1; i <= static_cast<int>(errc::internal); ++i) {
    auto e = static_cast<errc>(i);
    CAPTURE(code_text(e));
    auto a = error_answer(e, "m");
    CHECK(a.status >= 400);
    CHECK(a.status < 600);
    auto v = boost::json::parse(a.body);
    CHECK(v.at("error").as_string() == http_status_of(e).code);
    CHECK(v.at("message").as_string() == "m");
  }
}

}  // namespace test_gateway_http_error_unit
