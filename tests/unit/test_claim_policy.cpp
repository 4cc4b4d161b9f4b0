#include "worker/claim_policy.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_claim_policy_unit {

using namespace pushonce;
using worker::claim_note;
using worker::claim_part;
using worker::claim_path;
using worker::claim_tally;
using worker::race_result;
using st = lua::claim_state;

namespace {

std::string line(long long id, const std::string& user = "alice") {
  return R"({"id":")" + std::to_string(id) + R"(","user":")" + user +
         R"(","src":"bus:0","kind":"message","data":1,"ts":1})";
}

lua::claim_outcome out(st s, long long number = 0) {
  lua::claim_outcome o;
  o.state = s;
  o.number = number;
  return o;
}

std::vector<lua::claim_outcome> outs(std::size_t n, st s) {
  return std::vector<lua::claim_outcome>(n, out(s));
}

claim_tally tally(std::uint64_t won, std::uint64_t lost, std::uint64_t delivered,
                  std::uint64_t redelivered, std::uint64_t failed, std::uint64_t expired,
                  std::uint64_t dead_lettered = 0) {
  return claim_tally{won, lost, delivered, redelivered, failed, expired, dead_lettered};
}

}  // namespace

TEST_CASE("settle: delivered counts won and delivered; re-driven also redelivered") {
  auto heard = worker::settle(out(st::delivered, 7), claim_path::heard);
  CHECK(heard.tally == tally(1, 0, 1, 0, 0, 0));
  CHECK_FALSE(heard.dead_letter);
  CHECK(heard.note == claim_note::none);
  CHECK(heard.trace_claim == "claimed");
  CHECK(heard.trace_delivery == "delivered");

  auto raced = worker::settle(out(st::delivered, 7), claim_path::raced);
  CHECK(raced.tally == tally(1, 0, 1, 0, 0, 0));
  CHECK(raced.trace_claim == "claimed");

  auto redriven = worker::settle(out(st::delivered, 7), claim_path::redrive);
  CHECK(redriven.tally == tally(1, 0, 1, 1, 0, 0));
  CHECK_FALSE(redriven.dead_letter);
  CHECK(redriven.trace_claim == "reclaimed");
  CHECK(redriven.trace_delivery == "redelivered");
}

TEST_CASE("settle: done and taken count lost; dead counts nothing; none is dead-lettered") {
  for (auto path : {claim_path::heard, claim_path::raced, claim_path::redrive}) {
    for (auto s : {st::done, st::taken}) {
      auto r = worker::settle(out(s), path);
      CHECK(r.tally == tally(0, 1, 0, 0, 0, 0));
      CHECK_FALSE(r.dead_letter);
      CHECK(r.note == claim_note::none);
      CHECK(r.trace_delivery.empty());
    }
    auto dead = worker::settle(out(st::dead), path);
    CHECK(dead.tally == claim_tally{});
    CHECK_FALSE(dead.dead_letter);
    CHECK(dead.note == claim_note::none);
    CHECK(dead.trace_delivery.empty());
  }
}

TEST_CASE("settle: won (a lease over max attempts) counts won and is dead-lettered") {
  for (auto path : {claim_path::heard, claim_path::raced, claim_path::redrive}) {
    auto r = worker::settle(out(st::won, 6), path);
    CHECK(r.tally == tally(1, 0, 0, 0, 0, 0));
    CHECK(r.dead_letter);
    CHECK(r.note == claim_note::none);
    CHECK(r.trace_delivery.empty());
  }
  // claim.lua's number counts this lease too: 5 attempts delivered nothing.
  auto plan = worker::plan_dead_letter(6);
  CHECK(plan.attempts == 5);
  CHECK(plan.reason == "not delivered after 5 attempts");
  // Counted only when dead_letter.lua marked it (a lapsed lease marks nothing).
  CHECK(worker::dead_lettered(true) == tally(0, 0, 0, 0, 0, 0, 1));
  CHECK(worker::dead_lettered(false) == claim_tally{});
}

TEST_CASE("settle: failed counts failed and is logged, on every path") {
  for (auto path : {claim_path::heard, claim_path::raced, claim_path::redrive}) {
    auto o = out(st::failed);
    o.error = "OOM";
    auto r = worker::settle(o, path);
    CHECK(r.tally == tally(0, 0, 0, 0, 1, 0));
    CHECK_FALSE(r.dead_letter);
    CHECK(r.note == claim_note::delivery_failed);
  }
}

TEST_CASE("settle: expired is counted and logged when heard, not when re-driven") {
  for (auto path : {claim_path::heard, claim_path::raced}) {
    auto r = worker::settle(out(st::expired), path);
    CHECK(r.tally == tally(0, 0, 0, 0, 0, 1));
    CHECK(r.note == claim_note::heard_expired);
    CHECK_FALSE(r.dead_letter);
  }
  // The sweeper counts its own expired entries (sweep_plan).
  auto redriven = worker::settle(out(st::expired), claim_path::redrive);
  CHECK(redriven.tally == claim_tally{});
  CHECK(redriven.note == claim_note::none);
  CHECK_FALSE(redriven.dead_letter);
}

TEST_CASE("race: a lost race counts every message lost; a failed race claims anyway") {
  CHECK(worker::claims_after(race_result::won));
  CHECK_FALSE(worker::claims_after(race_result::lost));
  CHECK(worker::claims_after(race_result::failed));  // claim.lua decides
  CHECK(worker::lost_race(3) == tally(0, 3, 0, 0, 0, 0));
  // What claim_all counts for a lost part: one "taken" per message.
  claim_tally per_message;
  for (int i = 0; i < 3; ++i)
    per_message += worker::settle(lua::claim_outcome{}, claim_path::heard).tally;
  CHECK(per_message == worker::lost_race(3));
  CHECK(worker::failed_claim(4) == tally(0, 0, 0, 0, 4, 0));
}

TEST_CASE("split_parts: max_batch parts; heard parts of 2 or more race, each with its owner") {
  auto parts = worker::split_parts(450, claim_path::heard, 200);
  CHECK(parts == std::vector<claim_part>{
                     {0, 200, true, true}, {200, 200, true, true}, {400, 50, true, true}});
  // A last part of one message goes to claim.lua without a race.
  CHECK(worker::split_parts(201, claim_path::heard, 200) ==
        std::vector<claim_part>{{0, 200, true, true}, {200, 1, true, false}});
  CHECK(worker::split_parts(1, claim_path::heard, 200) ==
        std::vector<claim_part>{{0, 1, true, false}});
  CHECK(worker::split_parts(0, claim_path::heard, 200).empty());
}

TEST_CASE("split_parts: the raced owner claims the first part only; re-drives never race") {
  CHECK(worker::split_parts(5, claim_path::raced, 200) ==
        std::vector<claim_part>{{0, 5, false, false}});
  CHECK(worker::split_parts(5, claim_path::raced, 2) ==
        std::vector<claim_part>{{0, 2, false, false}, {2, 2, true, false}, {4, 1, true, false}});
  CHECK(worker::split_parts(5, claim_path::redrive, 2) ==
        std::vector<claim_part>{{0, 2, true, false}, {2, 2, true, false}, {4, 1, true, false}});
}

TEST_CASE("writes_batch_mark: a whole heard payload of 16+, all finished, on a single Redis") {
  const auto n = lua::mark_min_messages;
  auto finished = outs(n, st::delivered);
  finished[1] = out(st::done);
  finished[2] = out(st::dead);
  CHECK(worker::writes_batch_mark(n, n, claim_path::heard, false, finished));
  CHECK(worker::writes_batch_mark(n, n, claim_path::raced, false, finished));
  // Not re-driven, not on a cluster, not a part of a bigger batch, not a small batch.
  CHECK_FALSE(worker::writes_batch_mark(n, n, claim_path::redrive, false, finished));
  CHECK_FALSE(worker::writes_batch_mark(n, n, claim_path::heard, true, finished));
  CHECK_FALSE(worker::writes_batch_mark(n, n + 1, claim_path::heard, false, finished));
  auto small = outs(n - 1, st::delivered);
  CHECK_FALSE(worker::writes_batch_mark(n - 1, n - 1, claim_path::heard, false, small));
  // One message the sweeper may still have to re-drive: no mark.
  for (auto s : {st::taken, st::won, st::failed, st::expired}) {
    auto one_open = finished;
    one_open.back() = out(s);
    CHECK_FALSE(worker::writes_batch_mark(n, n, claim_path::heard, false, one_open));
  }
}

TEST_CASE("race_whole_payload: 2 to max_batch lines with a bus message first, never traced") {
  auto a = line(11), b = line(12), c = line(13);
  std::vector<std::string_view> three{a, b, c};
  auto first = worker::race_whole_payload(three, 200, false);
  REQUIRE(first);
  CHECK(first->id == "11");
  CHECK_FALSE(worker::race_whole_payload(three, 200, true));  // --trace: parse every line
  CHECK_FALSE(worker::race_whole_payload(three, 2, false));   // over max_batch: per part
  std::vector<std::string_view> one{a};
  CHECK_FALSE(worker::race_whole_payload(one, 200, false));
  std::vector<std::string_view> bad_first{"not json", b};
  CHECK_FALSE(worker::race_whole_payload(bad_first, 200, false));
}

TEST_CASE("parse_lines: malformed lines are counted failed, kept with why, and skipped") {
  auto a = line(21), c = line(23);
  std::vector<std::string_view> lines{a, "{\"id\":", c};
  auto parsed = worker::parse_lines(lines);
  REQUIRE(parsed.messages.size() == 2);
  CHECK(parsed.messages[0].id == "21");
  CHECK(parsed.messages[1].id == "23");
  REQUIRE(parsed.malformed.size() == 1);
  CHECK(parsed.malformed[0].second == "{\"id\":");
  CHECK_FALSE(parsed.malformed[0].first.empty());
  CHECK(parsed.tally == tally(0, 0, 0, 0, 1, 0));
}

TEST_CASE("claim_tally: += adds every counter") {
  auto t = tally(1, 2, 3, 4, 5, 6, 7);
  t += tally(1, 1, 1, 1, 1, 1, 1);
  CHECK(t == tally(2, 3, 4, 5, 6, 7, 8));
}

}  // namespace test_claim_policy_unit
