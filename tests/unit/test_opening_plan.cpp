#include "leader/opening_plan.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <array>

#include "core/redis/scripts.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_opening_plan_unit {

using namespace pushonce;
using leader::opening_plan;
using kind = opening_plan::step::kind;

namespace {
queue_settings prequeue_at(long long ms, bool shuffle) {
  queue_settings s;
  s.state = queue_settings::state_kind::prequeue;
  s.opens_at = ms;
  s.shuffle = shuffle;
  return s;
}
}  // namespace

TEST_CASE("opening plan: due only in the pre-queue at or after the opening time") {
  CHECK_FALSE(opening_plan::due(prequeue_at(1000, true), 999));
  CHECK(opening_plan::due(prequeue_at(1000, true), 1000));
  CHECK(opening_plan::due(prequeue_at(1000, false), 5000));
  CHECK_FALSE(opening_plan::due(queue_settings{}, 5000));
  auto closed = prequeue_at(1000, true);
  closed.state = queue_settings::state_kind::closed;
  CHECK_FALSE(opening_plan::due(closed, 5000));
}

TEST_CASE("opening plan: shuffled: draw pages with a cursor, then move batches until empty") {
  opening_plan p(1000);
  CHECK(p.next().what == kind::none);
  p.begin(true);
  auto s = p.next();
  CHECK(s.what == kind::draw);
  CHECK(s.after == 0);
  CHECK(s.count == 1000);
  p.on_draw({1000, 1000, false, true});
  CHECK(p.next().what == kind::draw);
  CHECK(p.next().after == 1000);
  p.on_draw({2500, 500, true, true});  // the last page
  CHECK(p.drawn() == 1500);
  s = p.next();
  CHECK(s.what == kind::move);
  CHECK(s.count == 1000);
  p.on_move({1000, 500, true, false});
  CHECK_FALSE(p.finished());
  p.on_move({500, 0, true, false});
  CHECK(p.finished());
  CHECK(p.moved() == 1500);
  CHECK(p.next().what == kind::none);
}

TEST_CASE("opening plan: unshuffled moves at once; batch bounds") {
  opening_plan p(5000);  // clamped to what a script takes
  p.begin(false);
  CHECK(p.next().what == kind::move);
  CHECK(p.next().count == 1000);
  opening_plan small(0);
  small.begin(false);
  CHECK(small.next().count == 1);
}

TEST_CASE("opening plan: not due any more (closed, rescheduled, opened by another): stop") {
  opening_plan p;
  p.begin(true);
  p.on_draw({0, 0, true, false});
  CHECK(p.finished());
  p.begin(false);
  p.on_move({0, 10, false, false});
  CHECK(p.finished());
}

TEST_CASE("opening plan: resuming starts over: the draw pass draws only what is missing") {
  // A leader killed mid-opening: a new plan begins from the start; the script answers
  // with the users it drew (none already drawn), then the moves go on.
  opening_plan resumed;
  resumed.begin(true);
  resumed.on_draw({1000, 0, false, true});   // a page drawn before the kill
  resumed.on_draw({1400, 150, true, true});  // the rest
  CHECK(resumed.drawn() == 150);
  CHECK(resumed.next().what == kind::move);
  // A move that finds undrawn users (cannot happen through the scripts) draws them first.
  resumed.on_move({0, 300, true, true});
  CHECK(resumed.next().what == kind::draw);
  CHECK(resumed.next().after == 0);
}

TEST_CASE("opening plan: draw keys are 49-bit integers from 7 random bytes") {
  std::array<unsigned char, 7> ones{};
  ones.fill(0xff);
  CHECK(leader::draw_key_of(ones) == (1LL << 49) - 1);
  std::array<unsigned char, 7> zero{};
  CHECK(leader::draw_key_of(zero) == 0);
  std::array<unsigned char, 7> b{0, 0, 0, 0, 0, 1, 2};
  CHECK(leader::draw_key_of(b) == 258);
}

TEST_CASE("opening scripts: the KEYS/ARGV layout of their headers") {
  keys k("ns");
  CHECK(lua::script_command(lua::opening_draw_for(k, "q", 7, 0, {5, 6})) ==
        redis::command{"EVALSHA", redis::get_script("opening_draw").sha1, "4", "ns:{q:q}:settings",
                       "ns:{q:q}:prequeue", "ns:{q:q}:prequeue:draw", "ns:{q:q}:fence", "7", "0",
                       "5", "6"});
  CHECK(lua::script_command(lua::opening_move_for(k, "q", 7, 1000)) ==
        redis::command{"EVALSHA", redis::get_script("opening_move").sha1, "8", "ns:{q:q}:settings",
                       "ns:{q:q}:prequeue", "ns:{q:q}:prequeue:draw", "ns:{q:q}:fence",
                       "ns:{q:q}:waiting", "ns:{q:q}:ticket", "ns:{q:q}:events",
                       "ns:{q:q}:prequeue:seq", "7", "1000", "ns:leader:wake", "q"});
  const auto& move = redis::get_script("opening_move").text;
  const char* names[] = {
      "local settings = KEYS[1]", "local prequeue = KEYS[2]",     "local draw = KEYS[3]",
      "local fence = KEYS[4]",    "local waiting = KEYS[5]",      "local ticket_counter = KEYS[6]",
      "local events = KEYS[7]",   "local prequeue_seq = KEYS[8]", "local token_arg = ARGV[1]",
      "local max_arg = ARGV[2]",  "local wake = ARGV[3]",         "local queue = ARGV[4]"};
  std::size_t last = 0;
  for (auto n : names) {
    auto at = move.find(n);
    CHECK_MESSAGE(at != std::string::npos, n);
    CHECK_MESSAGE(at >= last, n);
    last = at;
  }
}

}  // namespace test_opening_plan_unit
