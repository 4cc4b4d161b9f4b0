#include "core/message_history.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <boost/json.hpp>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_message_history_unit {

using namespace pushonce;
namespace json = boost::json;
using kind = lua::claim_record::kind;

namespace {

constexpr long long ts = 1700000000000;
constexpr long long window = 120000;

std::string line(long long id, const std::string& user = "alice", long long at = ts) {
  return R"({"id":")" + std::to_string(id) + R"(","user":")" + user +
         R"(","src":"bus:0","kind":"message","data":{"n":1},"ts":)" + std::to_string(at) + "}";
}

lua::claim_record rec(kind k) {
  lua::claim_record r;
  r.state = k;
  return r;
}

std::string event(const json::array& a, std::size_t i) {
  return std::string(a.at(i).at("event").as_string());
}

}  // namespace

TEST_CASE("line_of / first_id / last_id on a multi-line outbox entry") {
  auto entry = line(4096) + "\n" + line(8192, "bob") + "\n" + line(40960);
  auto l = line_of(entry, "8192");
  REQUIRE(l);
  CHECK(*l == line(8192, "bob"));
  CHECK_FALSE(line_of(entry, "819"));  // a prefix of an id is not the id
  CHECK_FALSE(line_of(entry, "1"));
  CHECK(line_of(entry, "40960") == line(40960));
  CHECK(first_id(entry) == 4096);
  CHECK(last_id(entry) == 40960);
  CHECK(first_id(line(7)) == 7);
  CHECK(last_id(line(7)) == 7);
  CHECK(first_id("") == 0);
  CHECK(last_id("garbage") == 0);
  CHECK(first_id(R"({"id":"x"})") == 0);
}

TEST_CASE("history: published, then delivered or redelivered with offset and attempts") {
  auto d = rec(kind::delivered);
  d.offset = 5;
  d.attempts = 1;
  auto h = history(line(4096), d, {}, ts + 1000, window);
  REQUIRE(h.size() == 2);
  CHECK(event(h, 0) == "published");
  CHECK(h.at(0).at("user") == "alice");
  CHECK(h.at(0).at("kind") == "message");
  CHECK(h.at(0).at("src") == "bus:0");
  CHECK(h.at(0).at("ts") == ts);
  CHECK(event(h, 1) == "delivered");
  CHECK(h.at(1).at("offset") == 5);
  CHECK(h.at(1).at("attempts") == 1);

  // The leader's own `published` record (NS:trace:<id>, one per assignment) is the same
  // event as the outbox line's: shown once, with the line's fields.
  auto once = history(line(4096), d,
                      {R"({"event":"published","kind":"assignment","queue":"q"})",
                       R"({"event":"claimed","worker":"w1"})"},
                      ts + 1000, window);
  REQUIRE(once.size() == 3);
  CHECK(event(once, 0) == "published");
  CHECK(event(once, 1) == "delivered");
  CHECK(event(once, 2) == "claimed");

  d.attempts = 3;
  auto h2 = history(line(4096), d, {}, ts + 1000, window);
  CHECK(event(h2, 1) == "redelivered");
  CHECK(h2.at(1).at("attempts") == 3);
}

TEST_CASE("history: leased / lease_expired, released, dead_lettered") {
  auto l = rec(kind::leased);
  l.owner = "w1-3";
  l.until_ms = ts + 5000;
  l.attempts = 2;
  auto live = history(line(1), l, {}, ts + 1000, window);
  REQUIRE(live.size() == 2);
  CHECK(event(live, 1) == "leased");
  CHECK(live.at(1).at("worker") == "w1-3");
  CHECK(live.at(1).at("until") == ts + 5000);
  CHECK(live.at(1).at("attempts") == 2);
  CHECK(event(history(line(1), l, {}, ts + 5000, window), 1) == "leased");  // until inclusive
  CHECK(event(history(line(1), l, {}, ts + 5001, window), 1) == "lease_expired");

  auto r = rec(kind::released);
  r.attempts = 1;
  auto rel = history(line(1), r, {}, ts, window);
  CHECK(event(rel, 1) == "released");
  CHECK(rel.at(1).at("attempts") == 1);

  auto x = rec(kind::dead);
  x.attempts = 5;
  x.reason = "max attempts";
  auto dead = history(line(1), x, {}, ts, window);
  CHECK(event(dead, 1) == "dead_lettered");
  CHECK(dead.at(1).at("attempts") == 5);
  CHECK(dead.at(1).at("reason") == "max attempts");
}

TEST_CASE("history: no record is pending inside the window, forgotten after it") {
  auto none = rec(kind::none);
  CHECK(event(history(line(1), none, {}, ts + 1000, window), 1) == "pending");
  CHECK(event(history(line(1), none, {}, ts + window, window), 1) == "pending");
  CHECK(event(history(line(1), none, {}, ts + window + 1, window), 1) == "forgotten");
}

TEST_CASE("history: an unreadable record; a line that is not JSON; detail events appended") {
  auto u = history(line(1), std::nullopt, {}, ts, window);
  REQUIRE(u.size() == 2);
  CHECK(event(u, 1) == "unknown");

  // Not JSON: still "published" (without fields); no ts, so never "forgotten".
  auto bad = history("not json", rec(kind::none), {}, ts, window);
  REQUIRE(bad.size() == 2);
  CHECK(event(bad, 0) == "published");
  CHECK_FALSE(bad.at(0).as_object().contains("user"));
  CHECK(event(bad, 1) == "pending");

  auto d = rec(kind::delivered);
  d.offset = 1;
  d.attempts = 1;
  auto det = history(
      line(1), d,
      {R"({"event":"claim_won","worker":"w1"})", "not json", R"({"event":"sent","offset":1})"}, ts,
      window);
  REQUIRE(det.size() == 4);  // the unparsable detail is skipped
  CHECK(event(det, 2) == "claim_won");
  CHECK(event(det, 3) == "sent");
}

}  // namespace test_message_history_unit
