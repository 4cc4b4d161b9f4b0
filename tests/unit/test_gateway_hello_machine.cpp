// The hello as a socket-free machine (gateway/session/hello_machine.hpp): every branch over
// plain events, the way session_flow::on_hello drives it.

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "gateway/session/hello_machine.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_hello_machine_unit {

using namespace pushonce::gateway;
using kind = hello_event::kind;

namespace {

hello_event ev(kind k) {
  hello_event e;
  e.what = k;
  return e;
}

hello_event failed(std::string message) {
  hello_event e = ev(kind::failed);
  e.message = std::move(message);
  return e;
}

hello_event opened(std::string epoch, long long latest, long long acked, bool rotated = false) {
  hello_event e = ev(kind::opened);
  e.epoch = std::move(epoch);
  e.latest = latest;
  e.acked = acked;
  e.rotated = rotated;
  return e;
}

hello_event page(std::optional<long long> first) {
  hello_event e = ev(kind::page);
  e.first = first;
  return e;
}

// Drives the machine up to (not including) the route's answer.
void to_route(hello_machine& m, hello_event open = opened("E", 10, 7)) {
  REQUIRE(m.resume(ev(kind::start)).what == hello_step::verify_token);
  REQUIRE(m.resume(ev(kind::ok)).what == hello_step::check_revoked);
  REQUIRE(m.resume(ev(kind::not_revoked)).what == hello_step::take_slot);
  REQUIRE(m.resume(ev(kind::ok)).what == hello_step::open_session);
  REQUIRE(m.resume(open).what == hello_step::route);
}

void check_close(const hello_action& a, std::uint16_t code, const char* reason, close_why why) {
  CHECK(a.what == hello_step::close);
  CHECK(a.code == code);
  CHECK(a.reason == reason);
  CHECK(a.why == why);
}

}  // namespace

TEST_CASE("hello machine: the happy path, step by step") {
  hello_machine m(std::nullopt);
  CHECK(m.step() == hello_step::verify_token);
  CHECK(m.resume(ev(kind::start)).what == hello_step::verify_token);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::check_revoked);
  CHECK(m.resume(ev(kind::not_revoked)).what == hello_step::take_slot);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::open_session);
  CHECK(m.resume(opened("E", 10, 7)).what == hello_step::route);
  CHECK(m.start() == 7);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::check_revoked_again);
  CHECK(m.resume(ev(kind::not_revoked)).what == hello_step::read_first_page);
  CHECK(m.resume(page(8)).what == hello_step::skip_lost);
  CHECK(m.welcome().recovered);
  CHECK(m.welcome().skip_to == 7);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::send_welcome);
  CHECK_FALSE(m.welcomed());
  CHECK(m.resume(ev(kind::ok)).what == hello_step::done);
  CHECK(m.step() == hello_step::done);
  CHECK(m.welcomed());
}

TEST_CASE("hello machine: with proof of work the challenge comes before the welcome") {
  hello_machine m(std::nullopt, true);
  to_route(m);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::check_revoked_again);
  CHECK(m.resume(ev(kind::not_revoked)).what == hello_step::read_first_page);
  CHECK(m.resume(page(std::nullopt)).what == hello_step::skip_lost);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::issue_challenge);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::send_welcome);
  CHECK(m.resume(ev(kind::ok)).what == hello_step::done);
  CHECK(m.welcomed());
}

TEST_CASE("hello machine: a session closed while the challenge was read ends without welcome") {
  hello_machine m(std::nullopt, true);
  to_route(m);
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  REQUIRE(m.resume(page(8)).what == hello_step::skip_lost);
  REQUIRE(m.resume(ev(kind::ok)).what == hello_step::issue_challenge);
  auto a = m.resume(ev(kind::closing));
  CHECK(a.what == hello_step::done);
  CHECK(a.code == 0);
  CHECK_FALSE(m.welcomed());
}

TEST_CASE("hello machine: a failed auth closes 1008 with the authenticator's message") {
  hello_machine m(std::nullopt);
  m.resume(ev(kind::start));
  auto a = m.resume(failed("token expired"));
  check_close(a, 1008, "token expired", close_why::auth_failed);
  SUBCASE("nothing after a close") {
    CHECK(m.resume(ev(kind::ok)).what == hello_step::close);
    CHECK(m.step() == hello_step::close);
  }
}

TEST_CASE("hello machine: a revoked identity closes 1008 revoked before any slot") {
  hello_machine m(std::nullopt);
  m.resume(ev(kind::start));
  m.resume(ev(kind::ok));
  check_close(m.resume(ev(kind::revoked)), 1008, "revoked", close_why::revoked);
}

TEST_CASE("hello machine: a refused slot closes 1008 too many sessions") {
  hello_machine m(std::nullopt);
  m.resume(ev(kind::start));
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  check_close(m.resume(ev(kind::failed)), 1008, "too many sessions for this user",
              close_why::too_many_sessions);
}

TEST_CASE("hello machine: session.lua failing closes 1013 and keeps its message") {
  hello_machine m(std::nullopt);
  m.resume(ev(kind::start));
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  m.resume(ev(kind::ok));
  auto a = m.resume(failed("connection lost"));
  check_close(a, 1013, "redis unavailable", close_why::session_lua_failed);
  CHECK(a.detail == "connection lost");
}

TEST_CASE("hello machine: closed while session.lua ran: done, no close of its own") {
  hello_machine m(std::nullopt);
  m.resume(ev(kind::start));
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  m.resume(ev(kind::ok));
  auto a = m.resume(ev(kind::closing));
  CHECK(a.what == hello_step::done);
  CHECK_FALSE(m.welcomed());
  CHECK(m.resume(ev(kind::ok)).what == hello_step::done);
}

TEST_CASE("hello machine: a revocation heard during the route closes 1008 revoked") {
  hello_machine m(std::nullopt);
  to_route(m);
  REQUIRE(m.resume(ev(kind::ok)).what == hello_step::check_revoked_again);
  check_close(m.resume(ev(kind::revoked)), 1008, "revoked", close_why::revoked_after_route);
}

TEST_CASE("hello machine: the second revocation check wins over a failed route") {
  hello_machine m(std::nullopt);
  to_route(m);
  REQUIRE(m.resume(failed("no subscriber")).what == hello_step::check_revoked_again);
  check_close(m.resume(ev(kind::revoked)), 1008, "revoked", close_why::revoked_after_route);
}

TEST_CASE("hello machine: a failed route closes 1013 after the second check") {
  hello_machine m(std::nullopt);
  to_route(m);
  REQUIRE(m.resume(failed("no subscriber")).what == hello_step::check_revoked_again);
  auto a = m.resume(ev(kind::not_revoked));
  check_close(a, 1013, "redis unavailable", close_why::subscribe_failed);
  CHECK(a.detail == "no subscriber");
}

TEST_CASE("hello machine: closed during the route: done before the second check") {
  hello_machine m(std::nullopt);
  to_route(m);
  CHECK(m.resume(ev(kind::closing)).what == hello_step::done);
}

TEST_CASE("hello machine: the first inbox read failing closes 1013") {
  hello_machine m(std::nullopt);
  to_route(m);
  m.resume(ev(kind::ok));
  REQUIRE(m.resume(ev(kind::not_revoked)).what == hello_step::read_first_page);
  auto a = m.resume(failed("timeout"));
  check_close(a, 1013, "redis unavailable", close_why::inbox_read_failed);
  CHECK(a.detail == "timeout");
}

TEST_CASE("hello machine: closed during the first read: done") {
  hello_machine m(std::nullopt);
  to_route(m);
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  CHECK(m.resume(ev(kind::closing)).what == hello_step::done);
}

TEST_CASE("hello machine: resume with since in the same epoch starts at since") {
  hello_machine m(since_position{"E", 9});
  REQUIRE(m.decide().session_args());
  to_route(m, opened("E", 10, 7));
  CHECK(m.start() == 9);
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  REQUIRE(m.resume(page(10)).what == hello_step::skip_lost);
  CHECK(m.welcome().recovered);
  CHECK_FALSE(m.decide().rotated());
}

TEST_CASE("hello machine: without since it starts at acked") {
  hello_machine m(std::nullopt);
  CHECK_FALSE(m.decide().session_args());
  to_route(m, opened("E", 10, 7));
  CHECK(m.start() == 7);
}

TEST_CASE("hello machine: since in another epoch starts at acked, not recovered") {
  hello_machine m(since_position{"OLD", 3});
  to_route(m, opened("E", 10, 7));
  CHECK(m.start() == 7);
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  m.resume(page(8));
  CHECK_FALSE(m.welcome().recovered);
}

TEST_CASE("hello machine: an epoch rotated by session.lua is seen by decide()") {
  hello_machine m(since_position{"E", 50});
  to_route(m, opened("F", 10, 7, true));
  CHECK(m.decide().rotated());
  CHECK(m.decide().latest() == 10);
  CHECK(m.start() == 7);
}

TEST_CASE("hello machine: a trimmed inbox: the welcome owns up to the lost offsets") {
  hello_machine m(std::nullopt);
  to_route(m, opened("E", 20, 5));
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  m.resume(page(12));
  CHECK_FALSE(m.welcome().recovered);
  CHECK(m.welcome().skip_to == 11);
}

TEST_CASE("hello machine: an expired inbox (empty while latest > start) is not recovered") {
  hello_machine m(std::nullopt);
  to_route(m, opened("E", 20, 5));
  m.resume(ev(kind::ok));
  m.resume(ev(kind::not_revoked));
  m.resume(page(std::nullopt));
  CHECK_FALSE(m.welcome().recovered);
}

}  // namespace test_gateway_hello_machine_unit
