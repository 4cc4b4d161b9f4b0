#include <doctest/doctest.h>

#include "gateway/session/session_machine.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_session_machine_unit {

using namespace pushonce::gateway;
using action = frame_decision::action;
using phase = session_phase;

namespace {
session_machine after_hello() {
  session_machine m;
  m.on_handshake();
  auto d = m.on_frame(R"({"op":"hello","user":"alice"})", true);
  REQUIRE(d.what == action::hello);
  return m;
}
}  // namespace

TEST_CASE("session_machine: starts in handshake; frames before it are ignored") {
  session_machine m;
  CHECK(m.phase() == phase::handshake);
  CHECK(m.on_frame(R"({"op":"ping"})", true).what == action::ignore);
  m.on_handshake();
  CHECK(m.phase() == phase::awaiting_hello);
}

TEST_CASE("session_machine: the first frame must be a text hello, else 1008") {
  for (auto [text, is_text] :
       {std::pair{R"({"op":"ping"})", true}, std::pair{R"({"op":"hello","user":"a"})", false},
        std::pair{"not json", true}, std::pair{R"({"op":"nope"})", true}}) {
    session_machine m;
    m.on_handshake();
    auto d = m.on_frame(text, is_text);
    CHECK(d.what == action::close_policy);
    CHECK(d.message == "the first frame must be hello");
    CHECK(m.phase() == phase::awaiting_hello);
  }
}

TEST_CASE("session_machine: a hello with a since offset the scripts refuse: bad_request, 1008") {
  // 10^15 passes a 2^53 bound but not session.lua's uint() (15 digits at most).
  session_machine m;
  m.on_handshake();
  auto d = m.on_frame(
      R"({"op":"hello","user":"alice","since":{"epoch":"e","offset":1000000000000000}})", true);
  CHECK(d.what == action::close_policy);
  CHECK(d.error.code == pushonce::errc::bad_request);
  CHECK(d.error.op == "hello");
  CHECK(d.message.find("since.offset") != std::string::npos);
  CHECK(m.phase() == phase::awaiting_hello);
}

TEST_CASE("session_machine: hello moves to authenticating and carries the op") {
  session_machine m;
  m.on_handshake();
  auto d = m.on_frame(R"({"op":"hello","user":"alice","since":{"epoch":"e","offset":3}})", true);
  REQUIRE(d.what == action::hello);
  auto& h = std::get<hello_op>(d.op);
  CHECK(h.user == "alice");
  REQUIRE(h.since);
  CHECK(h.since->offset == 3);
  CHECK(m.phase() == phase::authenticating);
  CHECK_FALSE(m.routed());
}

TEST_CASE("session_machine: after hello: ops dispatch, errors answer, a second hello is refused") {
  auto m = after_hello();
  m.on_routed();
  auto d = m.on_frame(R"({"op":"join","queue":"q"})", true);
  CHECK(d.what == action::dispatch);
  CHECK(std::get<join_op>(d.op).queue == "q");
  auto again = m.on_frame(R"({"op":"hello","user":"bob"})", true);
  CHECK(again.what == action::error);
  CHECK(again.error.code == pushonce::errc::bad_request);
  CHECK(again.error.op == "hello");
  auto bin = m.on_frame(R"({"op":"ping"})", false);
  CHECK(bin.what == action::error);
  CHECK(bin.error.message == "binary frames are not supported");
  auto unknown = m.on_frame(R"({"op":"dance"})", true);
  CHECK(unknown.what == action::error);
  CHECK(unknown.error.code == pushonce::errc::unknown_op);
  auto bad = m.on_frame("[1,2]", true);
  CHECK(bad.what == action::error);
  CHECK(bad.error.code == pushonce::errc::bad_request);
}

TEST_CASE("session_machine: catch-ups: first one at routing, another only when requested") {
  auto m = after_hello();
  CHECK_FALSE(m.request_catch_up());  // not routed yet: the first catch-up covers it
  CHECK(m.phase() == phase::authenticating);
  m.on_routed();
  CHECK(m.phase() == phase::catching_up);
  CHECK(m.routed());
  CHECK(m.catching_up());
  CHECK_FALSE(m.finish_catch_up());  // nothing requested meanwhile: live
  CHECK(m.phase() == phase::live);
  CHECK_FALSE(m.catching_up());
  CHECK(m.request_catch_up());  // live: start one now
  CHECK(m.phase() == phase::catching_up);
  CHECK_FALSE(m.request_catch_up());  // one runs: it runs again instead
  CHECK_FALSE(m.request_catch_up());  // several requests make one more pass
  CHECK(m.phase() == phase::catch_up_again);
  CHECK(m.finish_catch_up());  // one more pass
  CHECK(m.phase() == phase::catching_up);
  CHECK_FALSE(m.finish_catch_up());
  CHECK(m.phase() == phase::live);
}

TEST_CASE("session_machine: closing is terminal and stops everything") {
  auto m = after_hello();
  m.on_routed();
  CHECK(m.close());
  CHECK_FALSE(m.close());
  CHECK(m.closing());
  CHECK_FALSE(m.routed());
  CHECK_FALSE(m.request_catch_up());
  CHECK_FALSE(m.finish_catch_up());
  CHECK(m.on_frame(R"({"op":"ping"})", true).what == action::ignore);
  m.on_routed();
  m.on_handshake();
  CHECK(m.phase() == phase::closing);
  CHECK(to_string(m.phase()) == "closing");
}

TEST_CASE("session_machine: closing while waiting for hello") {
  session_machine m;
  m.on_handshake();
  CHECK(m.close());
  CHECK(m.on_frame(R"({"op":"hello","user":"a"})", true).what == action::ignore);
}

}  // namespace test_gateway_session_machine_unit
