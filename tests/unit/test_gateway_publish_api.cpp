#include <doctest/doctest.h>

#include <string>

#include "gateway/http/publish_api.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_publish_api_unit {

using namespace pushonce;
using namespace pushonce::gateway;

TEST_CASE("publish api: one message") {
  auto b = parse_publish_body(R"({"user":"alice","data":{"x":1},"id":"k1"})");
  REQUIRE(b);
  CHECK_FALSE(b.value().batch);
  REQUIRE(b.value().requests.size() == 1);
  auto& r = b.value().requests[0];
  CHECK(r.user == "alice");
  CHECK(r.data_json == R"({"x":1})");
  CHECK(r.idempotency_key == "k1");

  auto plain = parse_publish_body(R"({"user":"bob","data":"text"})");
  REQUIRE(plain);
  CHECK_FALSE(plain.value().requests[0].idempotency_key);
  CHECK(plain.value().requests[0].data_json == R"("text")");

  auto null_data = parse_publish_body(R"({"user":"bob","data":null})");
  REQUIRE(null_data);
  CHECK(null_data.value().requests[0].data_json == "null");
}

TEST_CASE("publish api: malformed bodies are bad_request") {
  for (auto text : {"", "nope", "[]", R"({"data":1})", R"({"user":"a"})", R"({"user":5,"data":1})",
                    R"({"user":"bad name","data":1})", R"({"user":"a","data":1,"id":""})",
                    R"({"user":"a","data":1,"id":7})", R"({"messages":[]})", R"({"messages":{}})",
                    R"({"messages":[{"user":"a","data":1},{"user":"a"}]})",
                    R"({"messages":[{"user":"a","data":1},3]})"}) {
    CAPTURE(text);
    auto b = parse_publish_body(text);
    REQUIRE_FALSE(b);
    CHECK(b.error().code == pushonce::errc::bad_request);
  }
  std::string long_key(201, 'k');
  CHECK_FALSE(parse_publish_body(R"({"user":"a","data":1,"id":")" + long_key + "\"}"));
  std::string ok_key(200, 'k');
  CHECK(parse_publish_body(R"({"user":"a","data":1,"id":")" + ok_key + "\"}"));
}

TEST_CASE("publish api: batch limits") {
  auto make = [](std::size_t n) {
    std::string s = R"({"messages":[)";
    for (std::size_t i = 0; i < n; ++i) {
      if (i) s += ",";
      s += R"({"user":"u)" + std::to_string(i) + R"(","data":)" + std::to_string(i) + "}";
    }
    return s + "]}";
  };
  auto full = parse_publish_body(make(1000));
  REQUIRE(full);
  CHECK(full.value().batch);
  CHECK(full.value().requests.size() == 1000);
  CHECK(full.value().requests[999].user == "u999");
  CHECK_FALSE(parse_publish_body(make(1001)));
}

TEST_CASE("publish api: answers") {
  publish_body one;
  one.requests.resize(1);
  std::vector<outcome<published>> r1{published{"4096", false}};
  auto a = render_publish_results(one, r1);
  CHECK(a.status == 200);
  CHECK(a.body == R"({"id":"4096","duplicate":false})");

  publish_body batch;
  batch.batch = true;
  batch.requests.resize(2);
  std::vector<outcome<published>> r2{published{"4096", false}, published{"4096", true}};
  auto b = render_publish_results(batch, r2);
  CHECK(b.status == 200);
  CHECK(b.body ==
        R"({"results":[{"id":"4096","duplicate":false},{"id":"4096","duplicate":true}]})");

  std::vector<outcome<published>> down{failure{errc::redis_unavailable, "timeout"}};
  auto c = render_publish_results(one, down);
  CHECK(c.status == 503);
  CHECK(c.body.find(R"("error":"unavailable")") != std::string::npos);

  std::vector<outcome<published>> odd{failure{errc::internal, "x"}};
  CHECK(render_publish_results(one, odd).status == 500);
  CHECK(error_json(errc::bad_request, "b\"c") == R"({"error":"bad_request","message":"b\"c"})");
}

TEST_CASE("publish api: a batch published in part says exactly which messages went out") {
  publish_body batch;
  batch.batch = true;
  batch.requests.resize(3);
  // Shard 0 published, shard 1 refused (its messages are not in any outbox).
  std::vector<outcome<published>> mixed{published{"4096", false},
                                        failure{errc::redis_unavailable, "Redis refused: OOM"},
                                        published{"8192", true}};
  auto m = render_publish_results(batch, mixed);
  CHECK(m.status == 207);
  CHECK(m.retry);
  CHECK(m.body == R"({"results":[{"id":"4096","duplicate":false},)"
                  R"({"error":"unavailable","message":"Redis refused: OOM"},)"
                  R"({"id":"8192","duplicate":true}]})");
  // An internal failure in part: 207 too, with its own word, and no Retry-After.
  std::vector<outcome<published>> odd{failure{errc::internal, "WRONGTYPE"},
                                      published{"4096", false}, published{"8192", false}};
  auto o = render_publish_results(batch, odd);
  CHECK(o.status == 207);
  CHECK_FALSE(o.retry);
  CHECK(o.body.find(R"({"error":"internal","message":"WRONGTYPE"})") != std::string::npos);

  // Nothing published: the error answer of the first failure, as for one message.
  std::vector<outcome<published>> none{failure{errc::redis_unavailable, "timeout"},
                                       failure{errc::internal, "x"},
                                       failure{errc::redis_unavailable, "timeout"}};
  auto n = render_publish_results(batch, none);
  CHECK(n.status == 503);
  CHECK(n.retry);
  CHECK(n.body.find(R"("error":"unavailable")") != std::string::npos);
  CHECK(n.body.find("results") == std::string::npos);

  CHECK(publish_outcome_of(mixed) == publish_outcome::part);
  CHECK(publish_outcome_of(none) == publish_outcome::none);
  std::vector<outcome<published>> all{published{"1", false}};
  CHECK(publish_outcome_of(all) == publish_outcome::all);
}

TEST_CASE(
    "publish api: data over the size cap is too_large, for one message or anywhere in a batch") {
  std::string big = "\"" + std::string(100, 'x') + "\"";  // 102 bytes serialised
  auto one = parse_publish_body(R"({"user":"a","data":)" + big + "}", 101);
  REQUIRE_FALSE(one);
  CHECK(one.error().code == pushonce::errc::too_large);
  CHECK(one.error().message.find("102 bytes") != std::string::npos);
  CHECK(parse_publish_body(R"({"user":"a","data":)" + big + "}", 102));
  auto batch = parse_publish_body(
      R"({"messages":[{"user":"a","data":1},{"user":"b","data":)" + big + "}]}", 101);
  REQUIRE_FALSE(batch);
  CHECK(batch.error().code == pushonce::errc::too_large);
  CHECK(batch.error().message.find("messages[1]") != std::string::npos);
  // The default cap is 64 KiB of serialised data.
  std::string at_cap = "\"" + std::string(65536 - 2, 'y') + "\"";
  CHECK(parse_publish_body(R"({"user":"a","data":)" + at_cap + "}"));
  std::string over = "\"" + std::string(65536 - 1, 'y') + "\"";
  CHECK_FALSE(parse_publish_body(R"({"user":"a","data":)" + over + "}"));
}

}  // namespace test_gateway_publish_api_unit
