#include "gateway/http/queue_control.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_queue_control_unit {

using namespace pushonce;
using gateway::parse_queue_control;
using lua::settings_op;

constexpr long long now = 1'700'000'000'000;

TEST_CASE("queue control: each action becomes its settings.lua call") {
  auto p = parse_queue_control(R"({"queue":"drop","action":"pause"})", now);
  REQUIRE(p);
  CHECK(p.value().queue == "drop");
  CHECK(p.value().op == settings_op::pause);
  CHECK(parse_queue_control(R"({"queue":"q","action":"resume"})", now).value().op ==
        settings_op::resume);
  CHECK(parse_queue_control(R"({"queue":"q","action":"close"})", now).value().op ==
        settings_op::close);
  auto open = parse_queue_control(R"({"queue":"q","action":"open"})", now);
  CHECK(open.value().op == settings_op::open);
  CHECK_FALSE(open.value().opens_at);
  CHECK_FALSE(open.value().shuffle);
  auto at = parse_queue_control(
      R"({"queue":"q","action":"open","at":1700000060000,"shuffle":true})", now);
  CHECK(at.value().opens_at == 1700000060000);
  CHECK(at.value().shuffle);
  auto rfc =
      parse_queue_control(R"({"queue":"q","action":"open","at":"2023-11-14T22:14:20Z"})", now);
  CHECK(rfc.value().opens_at == 1700000060000);
  auto set = parse_queue_control(
      R"({"queue":"q","action":"settings","max_waiting":100,"accept_timeout_s":30})", now);
  CHECK(set.value().op == settings_op::set);
  CHECK(set.value().fields == settings_change{{"max_waiting", "100"}, {"accept_timeout_s", "30"}});
  CHECK(parse_queue_control(R"({"queue":"q","action":"settings"})", now).value().op ==
        settings_op::get);
}

TEST_CASE("queue control: malformed bodies are bad_request") {
  for (auto body : {"", "[]", "{}", R"({"queue":"q"})", R"({"action":"pause"})",
                    R"({"queue":"a b","action":"pause"})", R"({"queue":"q","action":"explode"})",
                    R"({"queue":"q","action":"open","at":1})",            // in the past
                    R"({"queue":"q","action":"open","at":"tomorrow"})",   // not a time
                    R"({"queue":"q","action":"open","shuffle":"yes"})",   // not a bool
                    R"({"queue":"q","action":"pause","max_waiting":3})",  // values go with settings
                    R"({"queue":"q","action":"close","at":1700000060000})",     // at goes with open
                    R"({"queue":"q","action":"settings","max_waiting":-1})",    // negative
                    R"({"queue":"q","action":"settings","max_waiting":1.5})"})  // not whole
  {
    auto r = parse_queue_control(body, now);
    CHECK_MESSAGE(!r, body);
    if (!r) CHECK(r.error().code == errc::bad_request);
  }
}

}  // namespace test_gateway_queue_control_unit
