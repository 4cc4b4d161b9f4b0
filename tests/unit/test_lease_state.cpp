#include "leader/lease_state.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <system_error>

#include "core/redis/connection.hpp"
#include "core/redis/error.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_lease_state_unit {

using pushonce::leader::lease_action;
using pushonce::leader::lease_call;
using pushonce::leader::lease_reply;
using pushonce::leader::lease_state;
using ms = std::chrono::milliseconds;
using clock_type = lease_state::clock_type;

namespace {

lease_reply token(long long t) {
  return {lease_reply::kind::token, t};
}
const lease_reply held{lease_reply::kind::held_by_other, 0};
const lease_reply failed{lease_reply::kind::failed, 0};

pushonce::redis::result integer_result(long long v) {
  pushonce::redis::result r;
  r.value.kind = pushonce::redis::reply::type::integer;
  r.value.integer = v;
  return r;
}

}  // namespace

TEST_CASE("lease_state: acquires when the lease is free and renews every third of the lease") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  CHECK(!s.leading());
  CHECK(s.next_call() == lease_call::acquire);
  CHECK(s.on_reply(token(7), t0) == lease_action::lead);
  CHECK(s.leading());
  CHECK(s.token() == 7);
  CHECK(s.next_call() == lease_call::renew);
  CHECK(s.next_wake() == t0 + ms{1000});
  CHECK(s.on_reply(token(7), t0 + ms{1000}) == lease_action::hold);
  CHECK(s.next_wake() == t0 + ms{2000});
}

TEST_CASE("lease_state: stands by while another holder's lease is live") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  CHECK(s.on_reply(held, t0) == lease_action::standby);
  CHECK(!s.leading());
  CHECK(s.next_call() == lease_call::acquire);
  CHECK(s.next_wake() == t0 + ms{1000});
  CHECK(s.on_reply(token(2), t0 + ms{1000}) == lease_action::lead);  // it lapsed: ours now
}

TEST_CASE("lease_state: a renew answered 0 (the lease passed on) steps down at once") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(1), t0);
  CHECK(s.on_reply(held, t0 + ms{1000}) == lease_action::step_down);
  CHECK(!s.leading());
  CHECK(s.why().find("another leader") != std::string_view::npos);
  CHECK(s.next_call() == lease_call::acquire);
}

TEST_CASE("lease_state: failed renewals are tolerated up to 2/3 of the lease, then step down") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(1), t0);
  CHECK(s.on_reply(failed, t0 + ms{1000}) == lease_action::hold);
  CHECK(s.leading());
  CHECK(s.on_reply(failed, t0 + ms{2000}) == lease_action::hold);  // exactly 2/3: still ours
  CHECK(s.leading());
  CHECK(s.on_reply(failed, t0 + ms{2001}) == lease_action::step_down);
  CHECK(!s.leading());
  CHECK(s.why().find("cannot renew") != std::string_view::npos);
}

TEST_CASE("lease_state: a successful renew restarts the 2/3 window") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(1), t0);
  s.on_reply(failed, t0 + ms{1500});
  CHECK(s.on_reply(token(1), t0 + ms{1900}) == lease_action::hold);
  CHECK(s.on_reply(failed, t0 + ms{3500}) == lease_action::hold);
  CHECK(s.leading());
}

TEST_CASE("lease_state: errors while standing by change nothing") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  CHECK(s.on_reply(failed, t0 + ms{10000}) == lease_action::hold);
  CHECK(!s.leading());
  CHECK(s.next_call() == lease_call::acquire);
}

TEST_CASE("lease_state: a different token for us is adopted as a new leadership") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(4), t0);
  CHECK(s.on_reply(token(9), t0 + ms{1000}) == lease_action::lead);
  CHECK(s.token() == 9);
}

TEST_CASE("lease_state: a fenced assignment whose fence cannot be read steps down") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(4), t0);
  CHECK(s.on_fenced("a newer leader has assigned", std::nullopt, t0) == lease_action::step_down);
  CHECK(!s.leading());
  CHECK(s.why() == "a newer leader has assigned");
  CHECK(s.on_fenced("again", 9, t0) == lease_action::hold);  // not leading: nothing to do
}

TEST_CASE("lease_state: a fence above our token moves the counter past it (advance)") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(4), t0);
  // A failover lost increments: the queue's fence is far above the counter.
  CHECK(s.on_fenced("fenced", 999999, t0) == lease_action::refence);
  CHECK(s.leading());  // the lease is ours: the other queues go on with token 4
  CHECK(s.next_call() == lease_call::advance);
  CHECK(s.refence_above() == 999999);
  CHECK(s.next_wake() == t0);  // at once
  // More fenced answers while the advance is under way change nothing (no count).
  CHECK(s.on_fenced("fenced", 999999, t0) == lease_action::hold);
  CHECK(s.next_call() == lease_call::advance);
  // A failed advance is retried (the 2/3 rule still applies).
  CHECK(s.on_reply(failed, t0 + ms{10}) == lease_action::hold);
  CHECK(s.next_call() == lease_call::advance);
  // The new token is above the fence: lead with it (every queue is looked at again).
  CHECK(s.on_reply(token(1000000), t0 + ms{20}) == lease_action::lead);
  CHECK(s.token() == 1000000);
  CHECK(s.next_call() == lease_call::renew);
  // A fence at or below our token (passed meanwhile) changes nothing.
  CHECK(s.on_fenced("fenced", 1000000, t0 + ms{30}) == lease_action::hold);
  CHECK(s.leading());
}

TEST_CASE("lease_state: an advance answered 0 (the lease is not ours) steps down") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(4), t0);
  CHECK(s.on_fenced("fenced", 50, t0) == lease_action::refence);
  CHECK(s.on_reply(held, t0 + ms{5}) == lease_action::step_down);
  CHECK(!s.leading());
  CHECK(s.next_call() == lease_call::acquire);
}

TEST_CASE("lease_state: fenced again and again within a lease: give the lease up") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(4), t0);
  long long t = 4;
  for (int i = 0; i < 3; ++i) {
    CHECK(s.on_fenced("fenced", t + 10, t0 + ms{i * 100}) == lease_action::refence);
    t += 11;
    CHECK(s.on_reply(token(t), t0 + ms{i * 100 + 10}) == lease_action::lead);
  }
  CHECK(s.on_fenced("fenced", t + 10, t0 + ms{400}) == lease_action::give_up);
  CHECK(!s.leading());
  CHECK(s.why().find("giving up the lease") != std::string_view::npos);
  CHECK(s.next_call() == lease_call::release);
  CHECK(s.on_fenced("fenced", t + 10, t0 + ms{400}) == lease_action::hold);
  // Released: stand by a whole lease, so that a standby takes over first.
  s.on_released(t0 + ms{500});
  CHECK(s.next_call() == lease_call::acquire);
  CHECK(s.next_wake() == t0 + ms{3500});
}

TEST_CASE("lease_state: advances a lease apart are not counted together") {
  auto t0 = clock_type::now();
  lease_state s(ms{3000}, t0);
  s.on_reply(token(4), t0);
  long long t = 4;
  for (int i = 0; i < 6; ++i) {
    auto at = t0 + ms{i * 3500};
    CHECK(s.on_fenced("fenced", t + 10, at) == lease_action::refence);
    t += 11;
    CHECK(s.on_reply(token(t), at + ms{10}) == lease_action::lead);
  }
}

TEST_CASE("lease_state: stop (SIGTERM) releases the lease only when it is ours") {
  auto t0 = clock_type::now();
  lease_state standby(ms{3000}, t0);
  CHECK(!standby.on_stop());
  lease_state leader(ms{3000}, t0);
  leader.on_reply(token(3), t0);
  CHECK(leader.on_stop());
  CHECK(!leader.leading());
  CHECK(!leader.on_stop());
}

TEST_CASE("lease_reply: tokens, 0, Redis error replies and transport errors") {
  auto ok = lease_reply::from(integer_result(12));
  CHECK(ok.what == lease_reply::kind::token);
  CHECK(ok.token == 12);
  CHECK(lease_reply::from(integer_result(0)).what == lease_reply::kind::held_by_other);
  pushonce::redis::result err;
  err.value = pushonce::redis::reply::make_error("ERR bad_request id and a positive lease");
  CHECK(lease_reply::from(err).what == lease_reply::kind::failed);
  pushonce::redis::result down;
  down.ec = pushonce::redis::error::timeout;
  CHECK(lease_reply::from(down).what == lease_reply::kind::failed);
  pushonce::redis::result nil;
  CHECK(lease_reply::from(nil).what == lease_reply::kind::failed);
}

}  // namespace test_lease_state_unit
