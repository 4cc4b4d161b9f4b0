// The gateway's limits as plain logic: token_bucket, frame_limiter, slot_counter,
// probe_cache (docs/security.md).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gateway/auth/auth_failures.hpp"
#include "gateway/limits/frame_limiter.hpp"
#include "gateway/limits/slot_counter.hpp"
#include "gateway/limits/token_bucket.hpp"
#include "gateway/state/probe_cache.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_limits_unit {

using namespace pushonce::gateway;
using namespace std::chrono_literals;

TEST_CASE("token_bucket: starts full, refuses when empty, refills at its rate up to the burst") {
  auto t = token_bucket::clock::now();
  token_bucket b(10, 5, t);
  for (int i = 0; i < 5; ++i) CHECK(b.take(t));
  CHECK_FALSE(b.take(t));
  CHECK_FALSE(b.take(t + 50ms));  // half a token
  CHECK(b.take(t + 100ms));       // one token per 100 ms
  CHECK_FALSE(b.take(t + 100ms));
  CHECK(b.available(t + 1h) == doctest::Approx(5));  // never above the burst
  CHECK_FALSE(b.take(t + 1h, 6));                    // a cost over what is there takes nothing
  CHECK(b.available(t + 1h) == doctest::Approx(5));
  CHECK(b.take(t + 1h, 5));
}

TEST_CASE("token_bucket: rate 0 is no limit; a clock going back adds nothing") {
  auto t = token_bucket::clock::now();
  token_bucket off(0, 1, t);
  for (int i = 0; i < 10000; ++i) REQUIRE(off.take(t));
  token_bucket b(1000, 1, t);
  CHECK(b.take(t));
  CHECK_FALSE(b.take(t - 1s));
}

TEST_CASE("frame_limiter: over the frame rate -> rate_limited, then close after the strikes") {
  rate_limits l;
  l.frames_per_s = 10;
  l.frame_burst = 3;
  l.strikes = 2;
  auto t = frame_limiter::clock::now();
  frame_limiter f(l, t);
  using v = frame_limiter::verdict;
  CHECK(f.on_frame(false, t) == v::pass);
  CHECK(f.on_frame(false, t) == v::pass);
  CHECK(f.on_frame(false, t) == v::pass);
  CHECK(f.on_frame(false, t) == v::rate_limited);
  CHECK(f.on_frame(false, t) == v::rate_limited);
  CHECK(f.on_frame(false, t) == v::close);

  frame_limiter g(l, t);
  for (int i = 0; i < 3; ++i) CHECK(g.on_frame(false, t) == v::pass);
  CHECK(g.on_frame(false, t) == v::rate_limited);
  CHECK(g.on_frame(false, t + 100ms) == v::pass);  // a frame that passes resets the strikes
  CHECK(g.refused_in_a_row() == 0);
  CHECK(g.on_frame(false, t + 100ms) == v::rate_limited);
  CHECK(g.on_frame(false, t + 100ms) == v::rate_limited);
  CHECK(g.on_frame(false, t + 100ms) == v::close);
}

TEST_CASE("frame_limiter: joins and leaves have their own, smaller bucket") {
  rate_limits l;
  l.frames_per_s = 1000;
  l.frame_burst = 1000;
  l.queue_ops_per_s = 1;
  l.queue_op_burst = 2;
  l.strikes = 100;
  auto t = frame_limiter::clock::now();
  frame_limiter f(l, t);
  using v = frame_limiter::verdict;
  CHECK(f.on_frame(true, t) == v::pass);
  CHECK(f.on_frame(true, t) == v::pass);
  CHECK(f.on_frame(true, t) == v::rate_limited);
  CHECK(f.on_frame(false, t) == v::pass);  // other ops still pass
  CHECK(f.on_frame(true, t + 1s) == v::pass);
}

TEST_CASE("frame_limiter: a rate of 0 turns a bucket off") {
  rate_limits l;
  l.frames_per_s = 0;
  l.queue_ops_per_s = 0;
  auto t = frame_limiter::clock::now();
  frame_limiter f(l, t);
  for (int i = 0; i < 10000; ++i)
    REQUIRE(f.on_frame(i % 2 == 0, t) == frame_limiter::verdict::pass);
}

TEST_CASE("slot_counter: total and per-key caps; a slot is given back when destroyed") {
  auto c = slot_counter::create(3, 2);
  auto a1 = c->acquire("a");
  auto a2 = c->acquire("a");
  REQUIRE(a1.held);
  REQUIRE(a2.held);
  auto a3 = c->acquire("a");
  CHECK_FALSE(a3.held);
  CHECK(a3.why == slot_counter::refusal::per_key);
  auto b1 = c->acquire("b");
  CHECK(b1.held);
  auto c1 = c->acquire("c");
  CHECK(c1.why == slot_counter::refusal::total);
  CHECK(c->total() == 3);
  CHECK(c->count("a") == 2);
  { auto gone = std::move(a1.held); }
  CHECK(c->count("a") == 1);
  CHECK(c->total() == 2);
  CHECK(c->acquire("c").held);  // a temporary: given back at once
  CHECK(c->total() == 2);
  slot_counter::slot moved;
  moved = std::move(b1.held);
  CHECK(c->count("b") == 1);
  moved = slot_counter::slot{};
  CHECK(c->count("b") == 0);
}

TEST_CASE("slot_counter: 0 is no limit") {
  auto c = slot_counter::create(0, 0);
  std::vector<slot_counter::slot> held;
  for (int i = 0; i < 1000; ++i) held.push_back(std::move(c->acquire("x").held));
  CHECK(c->count("x") == 1000);
  held.clear();
  CHECK(c->total() == 0);
}

TEST_CASE("probe_cache: one refresh per ttl; while one is out, the last answer is used") {
  probe_cache<int> p(1000ms);
  auto t = probe_cache<int>::clock::now();
  CHECK_FALSE(p.lookup(t));  // cold: refresh
  CHECK_FALSE(p.lookup(t));  // nothing stored yet: this one refreshes too
  p.store(1, t);
  CHECK(p.lookup(t + 999ms) == 1);
  CHECK_FALSE(p.lookup(t + 1000ms));  // stale: this request refreshes ...
  CHECK(p.lookup(t + 1001ms) == 1);   // ... the others keep the last answer meanwhile
  CHECK(p.lookup(t + 5000ms) == 1);
  p.store(2, t + 5000ms);
  CHECK(p.lookup(t + 5500ms) == 2);
}

TEST_CASE("slot_counter: without the per-key cap only the total counts") {
  auto c = slot_counter::create(3, 1);
  auto a1 = c->acquire("127.0.0.1", false);
  auto a2 = c->acquire("127.0.0.1", false);
  REQUIRE(a1.held);
  REQUIRE(a2.held);
  CHECK(c->count("127.0.0.1") == 2);
  CHECK(c->acquire("127.0.0.1").why == slot_counter::refusal::per_key);
  auto b = c->acquire("b", false);
  REQUIRE(b.held);
  CHECK(c->acquire("127.0.0.1", false).why == slot_counter::refusal::total);
}

TEST_CASE("auth_failures: an address over its failures waits; others are not affected") {
  auto t = auth_failures::clock::now();
  auth_failures f(3, 6);  // 3 failures, then one more every 10 s
  CHECK_FALSE(f.blocked("a", t));
  for (int i = 0; i < 3; ++i) f.failed("a", t);
  auto wait = f.blocked("a", t);
  REQUIRE(wait);
  CHECK(wait->count() == 10);
  CHECK_FALSE(f.blocked("b", t));
  CHECK(f.blocked("a", t + 5s));
  CHECK_FALSE(f.blocked("a", t + 10s));
  f.failed("a", t + 10s);
  CHECK(f.blocked("a", t + 10s));
}

TEST_CASE("auth_failures: log lines at most one a second, the dropped ones counted") {
  auto t = auth_failures::clock::now();
  auth_failures f;
  std::uint64_t dropped = 99;
  CHECK(f.may_log(dropped, t));
  CHECK(dropped == 0);
  CHECK_FALSE(f.may_log(dropped, t + 100ms));
  CHECK_FALSE(f.may_log(dropped, t + 900ms));
  CHECK(f.may_log(dropped, t + 1s));
  CHECK(dropped == 2);
}

TEST_CASE("auth_failures: a flood of addresses is bounded") {
  auto t = auth_failures::clock::now();
  auth_failures f(2, 60, 100);
  for (int i = 0; i < 1000; ++i) f.failed("10.0.0." + std::to_string(i), t);
  CHECK(f.tracked() <= 100);
  f.failed("x", t);
  f.failed("x", t);
  CHECK(f.blocked("x", t));
}

}  // namespace test_gateway_limits_unit
