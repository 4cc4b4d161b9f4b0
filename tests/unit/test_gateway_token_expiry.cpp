#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "gateway/protocol/protocol.hpp"
#include "gateway/session/op_handlers.hpp"
#include "gateway/session/session_machine.hpp"
#include "gateway/session/token_expiry.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_token_expiry_unit {

using namespace pushonce;
using namespace pushonce::gateway;
using namespace std::chrono_literals;
using verdict = token_expiry::refresh_verdict;

namespace {
boost::json::object token_expiry_json(const std::string& s) {
  return boost::json::parse(s).as_object();
}
}  // namespace

TEST_CASE("token_expiry: a session without a token never expires") {
  token_expiry e;
  CHECK_FALSE(e.expires());
  CHECK_FALSE(e.deadline_ms());
  CHECK_FALSE(e.wait(1'000'000));
  CHECK_FALSE(e.expired(9'000'000'000'000));
  token_expiry none(std::nullopt, 30s);
  CHECK_FALSE(none.expires());
}

TEST_CASE("token_expiry: the deadline is exp plus the leeway; wait counts down to it") {
  token_expiry e(1000, 30s);  // exp at 1000 s, 30 s of leeway
  CHECK(e.expires());
  CHECK(e.exp_ms() == 1'000'000);
  CHECK(e.deadline_ms() == 1'030'000);
  CHECK(e.wait(1'000'000) == 30'000ms);
  CHECK(e.wait(1'029'999) == 1ms);
  CHECK(e.wait(1'030'000) == 0ms);
  CHECK(e.wait(2'000'000) == 0ms);  // long past: fire at once
  CHECK_FALSE(e.expired(1'000'000));
  CHECK_FALSE(e.expired(1'029'999));
  CHECK(e.expired(1'030'000));
  token_expiry no_leeway(1000, 0s);
  CHECK(no_leeway.expired(1'000'000));
  token_expiry negative(1000, -5s);  // a negative leeway counts as none
  CHECK(negative.deadline_ms() == 1'000'000);
}

TEST_CASE("token_expiry: a refresh of the same user moves the deadline, later or earlier") {
  token_expiry e(1000, 10s);
  CHECK(e.refresh("alice", "alice", 2000) == verdict::accepted);
  CHECK(e.exp_ms() == 2'000'000);
  CHECK_FALSE(e.expired(1'500'000));  // the old deadline passed: not expired any more
  CHECK(e.wait(1'500'000) == 510'000ms);
  // An earlier exp is accepted too: the session follows the newest token.
  CHECK(e.refresh("alice", "alice", 1200) == verdict::accepted);
  CHECK(e.deadline_ms() == 1'210'000);
  CHECK(e.expired(1'500'000));
}

TEST_CASE("token_expiry: a refresh for another user is refused and changes nothing") {
  token_expiry e(1000, 10s);
  CHECK(e.refresh("alice", "mallory", 5000) == verdict::other_user);
  CHECK(e.exp_ms() == 1'000'000);
  CHECK(e.expired(1'010'000));
  CHECK(e.refresh("alice", "Alice", 5000) == verdict::other_user);  // names are exact
}

TEST_CASE("token_expiry: a session without a token that refreshes starts to expire") {
  token_expiry e;  // --dev-auth, hello with a user
  CHECK(e.refresh("alice", "alice", 1000) == verdict::accepted);
  CHECK(e.expires());
  CHECK(e.deadline_ms() == 1'000'000);  // the leeway of a token-less session: none given
}

TEST_CASE("refresh op: parsing") {
  auto r = parse_client_frame(R"({"op":"refresh","token":"a.b.c"})");
  auto* op = std::get_if<client_op>(&r);
  REQUIRE(op);
  REQUIRE(std::holds_alternative<refresh_op>(*op));
  CHECK(std::get<refresh_op>(*op).token == "a.b.c");
  CHECK(op_name(*op) == "refresh");
  for (const char* bad : {R"({"op":"refresh"})", R"({"op":"refresh","token":""})",
                          R"({"op":"refresh","token":42})", R"({"op":"refresh","token":null})"}) {
    auto b = parse_client_frame(bad);
    auto* err = std::get_if<protocol_error>(&b);
    REQUIRE(err);
    CHECK(err->code == errc::bad_request);
    CHECK(err->op == "refresh");
    CHECK(err->message.find("token") != std::string::npos);
  }
}

TEST_CASE("refresh op: allowed after hello, not before") {
  session_machine m;
  m.on_handshake();
  auto first = m.on_frame(R"({"op":"refresh","token":"a.b.c"})", true);
  CHECK(first.what == frame_decision::action::close_policy);
  session_machine ok;
  ok.on_handshake();
  REQUIRE(ok.on_frame(R"({"op":"hello","user":"alice"})", true).what ==
          frame_decision::action::hello);
  auto d = ok.on_frame(R"({"op":"refresh","token":"a.b.c"})", true);
  CHECK(d.what == frame_decision::action::dispatch);
  CHECK(std::holds_alternative<refresh_op>(d.op));
}

TEST_CASE("refresh op: the reply — refreshed with exp in ms, or bad_request") {
  token_expiry e(1000, 0s);
  auto ok = reply_refresh(outcome<identity>(identity{"alice", 4000, 3000}), "alice", e);
  CHECK(ok.accepted);
  auto f = token_expiry_json(ok.frame);
  CHECK(f.at("type") == "refreshed");
  CHECK(f.at("exp") == 4'000'000);
  CHECK(e.exp_ms() == 4'000'000);

  auto other = reply_refresh(outcome<identity>(identity{"bob", 9000, 3000}), "alice", e);
  CHECK_FALSE(other.accepted);
  auto o = token_expiry_json(other.frame);
  CHECK(o.at("type") == "error");
  CHECK(o.at("code") == "bad_request");
  CHECK(o.at("op") == "refresh");
  CHECK(e.exp_ms() == 4'000'000);  // unchanged

  auto bad =
      reply_refresh(outcome<identity>(failure{errc::auth_failed, "token expired"}), "alice", e);
  CHECK_FALSE(bad.accepted);
  auto b = token_expiry_json(bad.frame);
  CHECK(b.at("code") == "bad_request");  // not "internal": the client's token is at fault
  CHECK(std::string(b.at("message").as_string()).find("token expired") != std::string::npos);
  CHECK(e.exp_ms() == 4'000'000);
}

}  // namespace test_gateway_token_expiry_unit

namespace test_gateway_token_expiry_unit {

TEST_CASE("refresh op: a --dev-auth gateway without a secret says why it cannot verify a token") {
  auto dev = make_dev_authenticator();
  hello_op h;
  h.token = "a.b.c";  // what a refresh presents: a token and no user
  auto r = dev->authenticate(h);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "no JWT secret is configured on this gateway");
  token_expiry e;
  auto reply = token_expiry_json(reply_refresh(r, "alice", e).frame);
  CHECK(reply.at("code") == "bad_request");
  CHECK_FALSE(e.expires());  // still a session without a deadline
}

}  // namespace test_gateway_token_expiry_unit
