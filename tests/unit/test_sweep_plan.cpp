#include "worker/sweep_plan.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_sweep_plan_unit {

using namespace pushonce;
using worker::outbox_entry;
using worker::sweep_plan;
using kind = lua::claim_record::kind;
using st = lua::claim_state;

namespace {

constexpr long long now = 10'000'000;
constexpr auto lease = std::chrono::milliseconds(5000);
constexpr auto window = std::chrono::milliseconds(120000);
// Re-driven only while younger than window - 2 leases = 110 s.

std::string line(long long id, const std::string& user = "alice") {
  return R"({"id":")" + std::to_string(id) + R"(","user":")" + user +
         R"(","src":"bus:0","kind":"message","data":1,"ts":1})";
}

/// An outbox entry written `age_ms` ago, holding the given lines.
outbox_entry entry(long long age_ms, std::vector<std::string> lines, int seq = 0) {
  std::string raw;
  for (auto& l : lines) raw += (raw.empty() ? "" : "\n") + l;
  return outbox_entry{std::to_string(now - age_ms) + "-" + std::to_string(seq), raw};
}

std::optional<lua::claim_record> rec(kind k, long long until = 0) {
  lua::claim_record r;
  r.state = k;
  r.until_ms = until;
  r.attempts = 1;
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
std::vector<std::string> ids(const std::vector<const bus_message*>& ms) {
  std::vector<std::string> v;
  for (auto* m : ms) v.push_back(m->id);
  return v;
}

}  // namespace

TEST_CASE("sweep_plan: entries younger than the lease stop the page (and all after them)") {
  sweep_plan p(lease, window, now);
  auto e1 = entry(10000, {line(1)});
  auto e2 = entry(4000, {line(2)});   // too young
  auto e3 = entry(20000, {line(3)});  // after a young one: not looked at either
  p.take({e1, e2, e3});
  CHECK(p.entries() == 1);
  CHECK(p.looked_at() == 1);
  CHECK(p.last_id() == e1.id);
  CHECK(ids(p.to_check()) == std::vector<std::string>{"1"});

  sweep_plan empty(lease, window, now);
  empty.take({entry(100, {line(9)})});
  CHECK(empty.entries() == 0);
  CHECK(empty.to_check().empty());
  CHECK(empty.cursor().empty());
  CHECK(empty.last_id().empty());
}

TEST_CASE("sweep_plan: delivered and dead are finished; the cursor moves over them") {
  sweep_plan p(lease, window, now);
  auto e1 = entry(30000, {line(1)}, 0);
  auto e2 = entry(30000, {line(2)}, 1);
  p.take({e1, e2});
  p.on_records({rec(kind::delivered), rec(kind::dead)});
  CHECK(p.to_redrive().empty());
  CHECK(p.cursor() == e2.id);
  CHECK(p.redriven() == 0);
  CHECK(p.expired() == 0);
}

TEST_CASE("sweep_plan: a live lease blocks; expired lease, none and released are re-driven") {
  sweep_plan p(lease, window, now);
  auto e1 = entry(30000, {line(1)}, 0);
  auto e2 = entry(30000, {line(2)}, 1);
  auto e3 = entry(30000, {line(3)}, 2);
  auto e4 = entry(30000, {line(4)}, 3);
  p.take({e1, e2, e3, e4});
  p.on_records({rec(kind::leased, now + 1000), rec(kind::leased, now - 1), rec(kind::none),
                rec(kind::released)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"2", "3", "4"});
  p.on_redriven({out(st::delivered), out(st::done), out(st::dead)});
  CHECK(p.redriven() == 3);
  // The live lease holds the cursor at the start even though the rest is finished.
  CHECK(p.cursor().empty());

  // The same without the live lease: the cursor reaches the end.
  sweep_plan q(lease, window, now);
  q.take({e2, e3, e4});
  q.on_records({rec(kind::leased, now - 1), rec(kind::none), rec(kind::released)});
  q.on_redriven({out(st::delivered), out(st::delivered), out(st::delivered)});
  CHECK(q.cursor() == e4.id);
}

TEST_CASE("sweep_plan: delivered but not published is re-driven, whatever its age") {
  sweep_plan p(lease, window, now);
  auto young = entry(30000, {line(1)}, 0);
  auto old = entry(115000, {line(2)}, 1);  // past window - 2 leases
  p.take({old, young});
  auto unpublished = rec(kind::delivered);
  unpublished->unpublished = true;
  p.on_records({unpublished, unpublished});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"2", "1"});
  CHECK(p.expired() == 0);
  // Re-driven: the claim answered unpublished and its publish failed: look again.
  auto pending = out(st::done);
  pending->frame_pending = true;
  p.on_redriven({pending, out(st::done)});
  CHECK(p.redriven() == 1);
  CHECK(p.cursor().empty());
}

TEST_CASE("sweep_plan: a lease ending exactly now still counts as live") {
  sweep_plan p(lease, window, now);
  p.take({entry(30000, {line(1)})});
  p.on_records({rec(kind::leased, now)});
  CHECK(p.to_redrive().empty());
  CHECK(p.cursor().empty());
}

TEST_CASE("sweep_plan: too old and undelivered is expired, never re-driven; the cursor passes") {
  sweep_plan p(lease, window, now);
  auto old1 = entry(115000, {line(1)}, 0);  // older than window - 2 leases
  auto old2 = entry(115000, {line(2)}, 1);
  auto old3 = entry(115000, {line(3)}, 2);
  auto young = entry(100000, {line(4)});
  p.take({old1, old2, old3, young});
  p.on_records({rec(kind::none), rec(kind::released), rec(kind::leased, now - 1), rec(kind::none)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"4"});
  CHECK(p.expired() == 3);
  p.on_redriven({out(st::delivered)});
  CHECK(p.cursor() == young.id);

  // Too old but delivered is just finished, not expired.
  sweep_plan q(lease, window, now);
  q.take({old1});
  q.on_records({rec(kind::delivered)});
  CHECK(q.expired() == 0);
  CHECK(q.cursor() == old1.id);
  // Too old with a live lease still blocks.
  sweep_plan r(lease, window, now);
  r.take({old1});
  r.on_records({rec(kind::leased, now + 100)});
  CHECK(r.expired() == 0);
  CHECK(r.cursor().empty());
}

TEST_CASE("sweep_plan: a multi-line entry is passed only when all its lines are finished") {
  auto e1 = entry(30000, {line(1), line(2, "bob"), line(3)}, 0);
  auto e2 = entry(30000, {line(4)}, 1);
  {
    sweep_plan p(lease, window, now);
    p.take({e1, e2});
    CHECK(p.entries() == 2);
    CHECK(p.looked_at() == 4);
    CHECK(p.last_id() == e2.id);
    CHECK(ids(p.to_check()) == std::vector<std::string>{"1", "2", "3", "4"});
    // The last line of e1 is unfinished: the cursor does not move at all.
    p.on_records({rec(kind::delivered), rec(kind::delivered), rec(kind::leased, now + 1000),
                  rec(kind::delivered)});
    CHECK(p.cursor().empty());
  }
  {
    sweep_plan p(lease, window, now);
    p.take({e1, e2});
    // e1 all finished, e2 not: the cursor moves to e1's id.
    p.on_records({rec(kind::delivered), rec(kind::dead), rec(kind::delivered),
                  rec(kind::leased, now + 1000)});
    CHECK(p.cursor() == e1.id);
  }
  {
    sweep_plan p(lease, window, now);
    p.take({e1, e2});
    // A middle line re-driven successfully: e1 finished.
    p.on_records(
        {rec(kind::delivered), rec(kind::none), rec(kind::delivered), rec(kind::delivered)});
    CHECK(ids(p.to_redrive()) == std::vector<std::string>{"2"});
    CHECK(p.to_redrive().front().user == "bob");
    p.on_redriven({out(st::delivered)});
    CHECK(p.cursor() == e2.id);
  }
}

TEST_CASE("sweep_plan: malformed lines are reported and finished") {
  sweep_plan p(lease, window, now);
  auto e1 = entry(30000, {line(1), "not a message", line(2)}, 0);
  auto e2 = outbox_entry{std::to_string(now - 30000) + "-1", ""};  // an empty entry
  auto e3 = entry(30000, {line(3)}, 2);
  p.take({e1, e2, e3});
  CHECK(p.looked_at() == 5);
  CHECK(ids(p.to_check()) == std::vector<std::string>{"1", "2", "3"});
  auto bad = p.malformed();
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].first == e1.id);
  CHECK(bad[0].second == "not a message");
  CHECK(bad[1].first == e2.id);
  CHECK(bad[1].second.empty());
  p.on_records({rec(kind::delivered), rec(kind::delivered), rec(kind::delivered)});
  CHECK(p.cursor() == e3.id);
}

TEST_CASE("sweep_plan: re-drive outcomes taken / failed / won / a failed call block the cursor") {
  for (auto blocking : {std::optional<lua::claim_outcome>(out(st::taken)), out(st::failed),
                        out(st::won), std::optional<lua::claim_outcome>()}) {
    sweep_plan p(lease, window, now);
    auto e1 = entry(30000, {line(1)}, 0);
    auto e2 = entry(30000, {line(2)}, 1);
    p.take({e1, e2});
    p.on_records({rec(kind::none), rec(kind::none)});
    REQUIRE(p.to_redrive().size() == 2);
    p.on_redriven({out(st::delivered), blocking});
    CHECK(p.redriven() == 1);
    CHECK(p.cursor() == e1.id);

    sweep_plan q(lease, window, now);
    q.take({e1, e2});
    q.on_records({rec(kind::none), rec(kind::none)});
    q.on_redriven({blocking, out(st::delivered)});
    CHECK(q.cursor().empty());
  }
  // Fewer outcomes than re-drives: the missing ones block.
  sweep_plan p(lease, window, now);
  auto e1 = entry(30000, {line(1)}, 0);
  auto e2 = entry(30000, {line(2)}, 1);
  p.take({e1, e2});
  p.on_records({rec(kind::none), rec(kind::none)});
  p.on_redriven({out(st::delivered)});
  CHECK(p.cursor() == e1.id);
}

TEST_CASE("sweep_plan: an unreadable record blocks; missing records block") {
  sweep_plan p(lease, window, now);
  auto e1 = entry(30000, {line(1)}, 0);
  auto e2 = entry(30000, {line(2)}, 1);
  p.take({e1, e2});
  p.on_records({rec(kind::delivered), std::nullopt});
  CHECK(p.to_redrive().empty());
  CHECK(p.cursor() == e1.id);

  sweep_plan q(lease, window, now);
  q.take({e1, e2});
  q.on_records({rec(kind::delivered)});  // one short
  CHECK(q.cursor() == e1.id);
}

TEST_CASE("sweep_plan: an entry id that is not <ms>-<seq> is looked at, never too old") {
  sweep_plan p(lease, window, now);
  p.take({outbox_entry{"garbage", line(1)}});
  CHECK(p.entries() == 1);
  p.on_records({rec(kind::none)});
  CHECK(p.expired() == 0);
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"1"});
}

TEST_CASE("trimmed_unseen: outbox entries trimmed before the cursor passed them") {
  using pushonce::worker::trimmed_unseen;
  // Nothing trimmed.
  auto t = trimmed_unseen(10, 10, true, 4);
  CHECK(t.lost == 0);
  CHECK(t.passed == 4);
  // Trimmed only what the sweepers had finished.
  t = trimmed_unseen(10, 7, true, 4);
  CHECK(t.lost == 0);
  CHECK(t.passed == 4);
  // Trimmed past the cursor: 2 entries never checked.
  t = trimmed_unseen(10, 4, true, 4);
  CHECK(t.lost == 2);
  CHECK(t.passed == 6);
  CHECK_FALSE(t.rescan);
  // Counted once: the next look finds nothing new.
  t = trimmed_unseen(10, 4, true, t.passed);
  CHECK(t.lost == 0);
  // A fresh outbox that no sweeper ever passed: every trimmed entry was unchecked.
  t = trimmed_unseen(300, 37, false, std::nullopt);
  CHECK(t.lost == 263);
  CHECK(t.passed == 263);
  // Swept before the count existed: start counting, sweep it again from its start.
  t = trimmed_unseen(300, 37, true, std::nullopt);
  CHECK(t.lost == 0);
  CHECK(t.passed == 263);
  CHECK(t.rescan);
}

TEST_CASE("sweep_plan: a batch mark with the entry's line count and digest finishes it") {
  auto mark = [](std::vector<std::string> lines, std::size_t n = 0) {
    std::vector<std::string_view> v(lines.begin(), lines.end());
    return std::optional<lua::batch_mark>(
        lua::batch_mark{n ? n : lines.size(), lua::batch_digest(v)});
  };
  sweep_plan p(lease, window, now);
  auto e1 = entry(10000, {line(1), line(2), line(3)}, 1);
  auto e2 = entry(9000, {line(4), line(5)}, 2);     // the mark counts 1 of its 2 lines
  auto e3 = entry(8000, {"not json", line(6)}, 3);  // first line malformed: no mark read
  auto e4 = entry(7000, {line(7), "not json"}, 4);  // a line that is not a message
  auto e5 = entry(6500, {line(8)}, 5);              // no mark
  auto e6 = entry(6000, {line(9)}, 6);              // a mark of another payload (a replay)
  p.take({e1, e2, e3, e4, e5, e6});
  // One candidate per entry that starts with a bus message.
  CHECK(ids(p.to_check_batches()) == std::vector<std::string>{"1", "4", "7", "8", "9"});
  p.on_batch_marks({mark({line(1), line(2), line(3)}), mark({line(4)}), mark({line(7), "not json"}),
                    std::nullopt, mark({line(9, "bob")})});
  // Only e1 is finished by its mark.
  CHECK(ids(p.to_check()) == std::vector<std::string>{"4", "5", "6", "7", "8", "9"});
  p.on_records({rec(kind::delivered), rec(kind::delivered), rec(kind::delivered),
                rec(kind::delivered), rec(kind::none), rec(kind::none)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"8", "9"});
  p.on_redriven({out(st::delivered), out(st::delivered)});
  CHECK(p.cursor() == e6.id);
  CHECK(p.passed() == 6);
  CHECK(p.redriven() == 2);
  CHECK(p.malformed().size() == 2);
}

TEST_CASE("sweep_plan: without marks (a cluster, or unreadable) every record is read") {
  sweep_plan p(lease, window, now);
  auto e1 = entry(10000, {line(1), line(2)});
  p.take({e1});
  p.on_batch_marks({});  // nothing read
  CHECK(p.to_check_batches().size() == 1);
  CHECK(ids(p.to_check()) == std::vector<std::string>{"1", "2"});
  p.on_records({rec(kind::delivered), rec(kind::none)});
  CHECK(ids(p.to_redrive()) == std::vector<std::string>{"2"});
  CHECK(p.cursor().empty());
}

}  // namespace test_sweep_plan_unit
