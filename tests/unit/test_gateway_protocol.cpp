#include <doctest/doctest.h>

#include <set>

#include "core/jwt.hpp"
#include "core/lua/script_limits.hpp"
#include "core/redis/scripts.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/auth/key_set.hpp"
#include "gateway/protocol/protocol.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_protocol_unit {

using namespace pushonce::gateway;

namespace {

client_op op_of(std::string_view text) {
  auto r = parse_client_frame(text);
  auto* op = std::get_if<client_op>(&r);
  REQUIRE_MESSAGE(op != nullptr, "expected a valid frame: " << text);
  return *op;
}

protocol_error error_of(std::string_view text) {
  auto r = parse_client_frame(text);
  auto* e = std::get_if<protocol_error>(&r);
  REQUIRE_MESSAGE(e != nullptr, "expected an error for: " << text);
  return *e;
}

}  // namespace

TEST_CASE("gateway protocol: hello") {
  auto op = op_of(R"({"op":"hello","user":"alice"})");
  auto& h = std::get<hello_op>(op);
  CHECK(h.user == "alice");
  CHECK_FALSE(h.token);
  CHECK_FALSE(h.since);
  CHECK(op_name(op) == "hello");

  auto op2 = op_of(R"({"op":"hello","token":"a.b.c","since":{"epoch":"e1","offset":42}})");
  auto& h2 = std::get<hello_op>(op2);
  CHECK(h2.token == "a.b.c");
  REQUIRE(h2.since);
  CHECK(h2.since->epoch == "e1");
  CHECK(h2.since->offset == 42);

  CHECK(error_of(R"({"op":"hello","user":5})").code == pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"hello","since":{"epoch":"e"}})").op == "hello");
  CHECK(error_of(R"({"op":"hello","since":{"epoch":"e","offset":-1}})").code ==
        pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"hello","since":{"epoch":"e","offset":1.5}})").code ==
        pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"hello","since":{"epoch":1,"offset":1}})").code ==
        pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"hello","since":[1]})").code == pushonce::errc::bad_request);
  // The bound is the scripts' (prelude.lua uint(): 15 digits), not 2^53: an offset that
  // passes here is one session.lua takes.
  constexpr auto max = pushonce::lua::max_script_uint;
  CHECK(std::to_string(max).size() == 15);
  CHECK(std::to_string(max + 1).size() == 16);
  auto at_max =
      R"({"op":"hello","user":"a","since":{"epoch":"e","offset":)" + std::to_string(max) + "}}";
  CHECK(std::get<hello_op>(op_of(at_max)).since->offset == max);
  auto over =
      R"({"op":"hello","user":"a","since":{"epoch":"e","offset":)" + std::to_string(max + 1) + "}}";
  CHECK(error_of(over).code == pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"hello","since":{"epoch":"e","offset":9007199254740992}})").code ==
        pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"ack","offset":1000000000000000})").code == pushonce::errc::bad_request);
  // prelude.lua's uint() is the other side of the bound.
  CHECK(pushonce::redis::get_script("session").text.find("#v > 15") != std::string::npos);
  // since: null is the same as no since
  CHECK_FALSE(std::get<hello_op>(op_of(R"({"op":"hello","user":"a","since":null})")).since);
}

TEST_CASE("gateway protocol: queue ops default to the default queue") {
  CHECK(std::get<join_op>(op_of(R"({"op":"join"})")).queue == "default");
  CHECK(std::get<join_op>(op_of(R"({"op":"join","queue":"q1"})")).queue == "q1");
  CHECK(std::get<leave_op>(op_of(R"({"op":"leave"})")).queue == "default");
  CHECK(std::get<leave_op>(op_of(R"({"op":"leave","queue":"x"})")).queue == "x");
  CHECK(std::get<position_op>(op_of(R"({"op":"position"})")).queue == "default");
  auto e = error_of(R"({"op":"join","queue":7})");
  CHECK(e.code == pushonce::errc::bad_request);
  CHECK(e.op == "join");
}

TEST_CASE("gateway protocol: ack, accept, ping") {
  CHECK(std::get<ack_op>(op_of(R"({"op":"ack","offset":7})")).offset == 7);
  CHECK(std::get<ack_op>(op_of(R"({"op":"ack","offset":0})")).offset == 0);
  CHECK(error_of(R"({"op":"ack"})").code == pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"ack","offset":"7"})").code == pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"ack","offset":-3})").op == "ack");
  CHECK(error_of(R"({"op":"ack","offset":1e300})").code == pushonce::errc::bad_request);
  CHECK(std::get<accept_op>(op_of(R"({"op":"accept","id":"4097"})")).id == "4097");
  CHECK(std::get<accept_op>(op_of(R"({"op":"accept","id":"4097"})")).queue == "default");
  CHECK(std::get<accept_op>(op_of(R"({"op":"accept","id":"1","queue":"vip"})")).queue == "vip");
  CHECK(error_of(R"({"op":"accept","id":"1","queue":7})").code == pushonce::errc::bad_request);
  // A name no queue can have is refused before anything looks it up.
  for (const char* op : {"join", "leave", "position"}) {
    CAPTURE(op);
    const std::string o(op);
    CHECK(error_of(R"({"op":")" + o + R"(","queue":"a{b}"})").code == pushonce::errc::bad_request);
    CHECK(error_of(R"({"op":")" + o + R"(","queue":""})").code == pushonce::errc::bad_request);
    CHECK(error_of(R"({"op":")" + o + R"(","queue":")" + std::string(129, 'q') + "\"}").code ==
          pushonce::errc::bad_request);
    op_of(R"({"op":")" + o + R"(","queue":")" + std::string(128, 'q') + "\"}");
  }
  CHECK(error_of(R"({"op":"accept","id":"1","queue":"bad name"})").code ==
        pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"accept"})").code == pushonce::errc::bad_request);
  CHECK(error_of(R"({"op":"accept","id":""})").code == pushonce::errc::bad_request);
  CHECK(std::holds_alternative<ping_op>(op_of(R"({"op":"ping"})")));
  CHECK(std::holds_alternative<ping_op>(op_of(R"({"op":"ping","extra":[1,2]})")));
}

TEST_CASE("gateway protocol: malformed frames and unknown ops") {
  for (auto text :
       {"", "not json", "{", "[1,2]", "\"hello\"", "42", "{\"op\":5}", "{}", "{\"user\":\"a\"}"}) {
    CAPTURE(text);
    auto e = error_of(text);
    CHECK(e.code == pushonce::errc::bad_request);
    CHECK(e.op == "");
  }
  auto e = error_of(R"({"op":"frobnicate"})");
  CHECK(e.code == pushonce::errc::unknown_op);
  CHECK(e.op == "frobnicate");
}

TEST_CASE("gateway protocol: rendered frames") {
  CHECK(
      render_welcome("alice", "s1", "e1", 3, true) ==
      R"({"type":"welcome","user":"alice","session":"s1","epoch":"e1","offset":3,"recovered":true})");
  CHECK(render_error(pushonce::errc::bad_request, "say \"hi\"", "join") ==
        R"({"type":"error","code":"bad_request","message":"say \"hi\"","op":"join"})");
  CHECK(render_joined("default", 1, 9) ==
        R"({"type":"joined","queue":"default","position":1,"ticket":9,"eta_s":null})");
  CHECK(render_joined("default", 1, 9, 42) ==
        R"({"type":"joined","queue":"default","position":1,"ticket":9,"eta_s":42})");
  CHECK(render_left("q") == R"({"type":"left","queue":"q"})");
  CHECK(render_position("q", 2) == R"({"type":"position","queue":"q","position":2,"eta_s":null})");
  CHECK(render_position("q", 2, 7) == R"({"type":"position","queue":"q","position":2,"eta_s":7})");
  CHECK(render_position_prequeue("q", 5) ==
        R"({"type":"position","queue":"q","position":null,"eta_s":null,"opens_at":5})");
  CHECK(render_position_prequeue("q", std::nullopt) ==
        R"({"type":"position","queue":"q","position":null,"eta_s":null,"opens_at":null})");
  CHECK(render_joined_prequeue("q", 5) ==
        R"({"type":"joined","queue":"q","position":null,"ticket":null,"eta_s":null,"opens_at":5})");
  CHECK(
      render_joined_prequeue("q", std::nullopt) ==
      R"({"type":"joined","queue":"q","position":null,"ticket":null,"eta_s":null,"opens_at":null})");
  CHECK(render_accepted("12") == R"({"type":"accepted","id":"12"})");
  CHECK(render_accepted("12", 1796148600000LL) ==
        R"({"type":"accepted","id":"12","expires_at":1796148600000})");
  CHECK(render_pong() == R"({"type":"pong"})");
}

TEST_CASE("gateway protocol: queue failures map to client error codes") {
  using pushonce::errc;
  CHECK(client_error_code(errc::already_queued) == "conflict");
  CHECK(client_error_code(errc::already_assigned) == "conflict");
  CHECK(client_error_code(errc::not_queued) == "not_found");
  CHECK(client_error_code(errc::not_found) == "not_found");
  CHECK(client_error_code(errc::bad_request) == "bad_request");
  CHECK(client_error_code(errc::unknown_op) == "unknown_op");
  CHECK(client_error_code(errc::rate_limited) == "rate_limited");
  // Anything else is the gateway's problem, whatever it was (Redis down or refusing work:
  // docs/protocol.md "Redis refusing work").
  CHECK(client_error_code(errc::redis_unavailable) == "internal");
  CHECK(client_error_code(errc::internal) == "internal");
  CHECK(client_error_code(errc::fenced) == "internal");
  CHECK(client_error_code(errc::not_assigned) == "internal");
  CHECK(client_error_code(errc::exhausted) == "internal");
}

TEST_CASE("gateway protocol: every errc has a frame code of the contract") {
  const std::set<std::string_view> contract{"bad_request", "unknown_op",   "not_found",
                                            "conflict",    "rate_limited", "internal"};
  for (int i = 1; i <= static_cast<int>(pushonce::errc::internal); ++i) {
    auto e = static_cast<pushonce::errc>(i);
    CAPTURE(pushonce::code_text(e));
    CHECK(contract.count(client_error_code(e)) == 1);
    auto frame = render_error(e, "why", "join");
    CHECK(frame.find(std::string(R"("code":")") + std::string(client_error_code(e)) + "\"") !=
          std::string::npos);
  }
}

TEST_CASE("gateway hello rules: authenticators") {
  auto dev = make_dev_authenticator();
  hello_op h;
  h.user = "alice";
  auto ok = dev->authenticate(h);
  REQUIRE(ok);
  CHECK(ok.value().user == "alice");
  CHECK_FALSE(ok.value().exp);  // a dev-auth session without a token does not expire

  hello_op none;
  CHECK_FALSE(dev->authenticate(none));
  hello_op bad;
  bad.user = "no spaces";
  CHECK_FALSE(dev->authenticate(bad));
  bad.user = "{u:x}";
  CHECK_FALSE(dev->authenticate(bad));

  auto jwt = make_jwt_authenticator("s3cret");
  hello_op t;
  t.token = "x.y.z";
  CHECK_FALSE(jwt->authenticate(t));
  t.token = pushonce::jwt::mint("bob", std::chrono::seconds(60), "s3cret");
  auto verified = jwt->authenticate(t);
  REQUIRE(verified);
  CHECK(verified.value().user == "bob");
  // The session follows its token: exp and iat come with the user.
  REQUIRE(verified.value().exp);
  REQUIRE(verified.value().iat);
  CHECK(*verified.value().exp - *verified.value().iat == 60);
  t.token = pushonce::jwt::mint("bob", std::chrono::seconds(60), "other");
  CHECK_FALSE(jwt->authenticate(t));
  CHECK_FALSE(jwt->authenticate(h));  // dev-style hello without --dev-auth
  auto no_secret = make_jwt_authenticator("");
  t.token = pushonce::jwt::mint("bob", std::chrono::seconds(60), "s3cret");
  CHECK_FALSE(no_secret->authenticate(t));
  // --dev-auth with a secret still verifies a token when one is given.
  auto dev_jwt = make_dev_authenticator("s3cret");
  CHECK(dev_jwt->authenticate(t).value().user == "bob");
  t.token = "forged";
  CHECK_FALSE(dev_jwt->authenticate(t));

  // A rotation: the new secret and the previous one both verify; any other does not.
  auto rotating = make_jwt_authenticator("new-secret", {}, nullptr, "old-secret");
  t.token = pushonce::jwt::mint("carol", std::chrono::seconds(60), "old-secret");
  CHECK(rotating->authenticate(t).value().user == "carol");
  t.token = pushonce::jwt::mint("carol", std::chrono::seconds(60), "new-secret");
  CHECK(rotating->authenticate(t).value().user == "carol");
  t.token = pushonce::jwt::mint("carol", std::chrono::seconds(60), "third-secret");
  CHECK_FALSE(rotating->authenticate(t));
  auto after = make_jwt_authenticator("new-secret", {}, nullptr, "");
  t.token = pushonce::jwt::mint("carol", std::chrono::seconds(60), "old-secret");
  CHECK_FALSE(after->authenticate(t));  // the rotation ended: the old secret is gone
}

}  // namespace test_gateway_protocol_unit
