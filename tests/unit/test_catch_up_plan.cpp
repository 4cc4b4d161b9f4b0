// The catch-up sweep's decisions (worker/sweep_plan with a deaf_window): which outbox
// entries a worker looks at once it hears a bus channel again, and what it leaves to the
// regular pass.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "worker/sweep_plan.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_catch_up_plan_unit {

using namespace pushonce;
using worker::deaf_window;
using worker::outbox_entry;
using worker::sweep_plan;
using kind = lua::claim_record::kind;
using st = lua::claim_state;
using namespace std::chrono_literals;

namespace {

constexpr long long now = 10'000'000;
constexpr auto lease = std::chrono::milliseconds(5000);
constexpr auto window = std::chrono::milliseconds(120000);  // too old after 110 s

std::string line(long long id) {
  return R"({"id":")" + std::to_string(id) +
         R"(","user":"alice","src":"bus:0","kind":"message","data":1,"ts":1})";
}

outbox_entry entry(long long age_ms, const std::string& raw, int seq = 0) {
  return outbox_entry{std::to_string(now - age_ms) + "-" + std::to_string(seq), raw};
}

std::optional<lua::claim_record> rec(kind k, long long until = 0) {
  lua::claim_record r;
  r.state = k;
  r.until_ms = until;
  return r;
}

std::optional<lua::claim_outcome> out(st s) {
  lua::claim_outcome o;
  o.state = s;
  return o;
}

std::vector<std::string> ids(const std::vector<bus_message>& ms) {
  std::vector<std::string> v;
  for (auto& m : ms) v.push_back(m.id);
  return v;
}

/// Deaf from 4 s ago until 1 s ago.
deaf_window deaf() {
  return {now - 4000, now - 1000};
}

}  // namespace

TEST_CASE("catch-up: entries published while deaf are looked at although younger than the lease") {
  sweep_plan p(lease, window, now, deaf());
  p.take({entry(6000, line(1)), entry(4500, line(2)), entry(3000, line(3)), entry(2000, line(4)),
          entry(500, line(5))});
  // 1 and 2 were heard before the window (1 is the regular pass's), 5 is heard again.
  CHECK(p.entries() == 2);
  CHECK(p.looked_at() == 2);
  p.on_records({rec(kind::none), rec(kind::none)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"3", "4"});
}

TEST_CASE("catch-up: what another worker finished or holds is not re-driven") {
  sweep_plan p(lease, window, now, deaf());
  p.take({entry(3500, line(1)), entry(3000, line(2)), entry(2500, line(3)), entry(2000, line(4))});
  p.on_records({rec(kind::delivered), rec(kind::dead), rec(kind::leased, now + 4000),
                rec(kind::leased, now - 1)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"4"});  // its lease ran out
  p.on_redriven({out(st::delivered)});
  CHECK(p.redriven() == 1);
}

TEST_CASE("catch-up: the window's ends are included; the regular plan keeps the lease rule") {
  deaf_window w{now - 3000, now - 2000};
  sweep_plan p(lease, window, now, w);
  p.take({entry(3001, line(1)), entry(3000, line(2)), entry(2000, line(3)), entry(1999, line(4))});
  CHECK(p.looked_at() == 2);
  p.on_records({rec(kind::none), rec(kind::none)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"2", "3"});

  sweep_plan regular(lease, window, now);
  regular.take({entry(6000, line(1)), entry(3000, line(2))});
  CHECK(regular.looked_at() == 1);  // 2 is younger than the lease
}

TEST_CASE("catch-up: the cursor, malformed lines and retention are left to the regular pass") {
  deaf_window w{now - 200'000, now};
  sweep_plan p(lease, window, now, w);
  p.take({entry(150'000, line(1)), entry(3000, "not a bus message"), entry(2500, line(2)),
          entry(2000, line(3))});
  CHECK(p.malformed().empty());
  // 1 is past retention and undelivered: not counted here, not re-driven.
  p.on_records({rec(kind::none), rec(kind::delivered), rec(kind::none)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"3"});
  p.on_redriven({out(st::expired)});  // claim.lua found it too old: the regular pass counts it
  CHECK(p.expired() == 0);
  CHECK(p.cursor().empty());
  CHECK(p.passed() == 0);

  // The same page in a regular pass (all of it older than the lease) counts and moves.
  sweep_plan r(lease, window, now + 10'000);
  r.take({entry(150'000, line(1)), entry(3000, "not a bus message"), entry(2500, line(2))});
  CHECK(r.malformed().size() == 1);
  r.on_records({rec(kind::none), rec(kind::delivered)});
  CHECK(r.expired() == 1);
  CHECK(!r.cursor().empty());
}

TEST_CASE("catch-up: an entry id that is not <ms>-<seq> is not in any window") {
  sweep_plan p(lease, window, now, deaf());
  p.take({outbox_entry{"x-1", line(1)}, entry(3000, line(2))});
  CHECK(p.looked_at() == 1);
}

TEST_CASE("deaf_window_of: local times mapped onto the Redis clock, with the margin") {
  const auto local = std::chrono::steady_clock::time_point(1000h);
  // Deaf from 4 s ago, heard again 1 s ago; Redis says `now`.
  auto w = worker::deaf_window_of(now, local, local - 4s, local - 1s, 500ms, lease, window);
  REQUIRE(w);
  CHECK(*w == deaf_window{now - 4500, now - 500});
  // Heard again just now: the window ends at Redis' now, not in the future.
  w = worker::deaf_window_of(now, local, local - 4s, local, 500ms, lease, window);
  REQUIRE(w);
  CHECK(w->until_ms == now);
  // Deaf for longer than retention: only what is not too old yet.
  w = worker::deaf_window_of(now, local, local - 10min, local - 1s, 500ms, lease, window);
  REQUIRE(w);
  CHECK(w->from_ms == now - 110'000);
  // Heard again longer ago than retention: nothing left.
  CHECK(!worker::deaf_window_of(now, local, local - 10min, local - 5min, 500ms, lease, window));
}

}  // namespace test_catch_up_plan_unit
