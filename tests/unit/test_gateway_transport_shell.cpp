#include <doctest/doctest.h>

#include <string>

#include "gateway/session/transport_shell.hpp"
#include "gateway/state/gateway_state.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_transport_shell_unit {

using namespace pushonce::gateway;

TEST_CASE("transport shell: a session's send queue follows the settings, low water at a quarter") {
  gateway_settings s;
  s.max_queue_frames = 1000;
  s.max_queue_bytes = 8000;
  auto l = session_queue_limits(s);
  CHECK(l.max_frames == 1000);
  CHECK(l.max_bytes == 8000);
  CHECK(l.low_frames == 250);
  CHECK(l.low_bytes == 2000);
  CHECK(l.max_batch == send_queue::limits{}.max_batch);
}

TEST_CASE("transport shell: a queue built from the settings closes a slow consumer at its bound") {
  gateway_settings s;
  s.max_queue_frames = 4;
  s.max_queue_bytes = 1u << 20;
  send_queue q(session_queue_limits(s));
  auto f = std::make_shared<const std::string>("x");
  for (int i = 0; i < 4; ++i) CHECK(q.push(f) == send_queue::push_result::accepted);
  CHECK(q.push(f) == send_queue::push_result::over_limit);
  CHECK(slow_consumer_close_code == 1013);
}

TEST_CASE("transport shell: a close reason is cut to what a close frame holds") {
  CHECK(bounded_close_reason("slow consumer") == "slow consumer");
  std::string long_reason(300, 'r');
  CHECK(bounded_close_reason(long_reason).size() == max_close_reason);
  CHECK(max_close_reason <= 123);
  CHECK(bounded_close_reason("").empty());
}

}  // namespace test_gateway_transport_shell_unit
