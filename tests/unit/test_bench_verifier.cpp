// pushonce-bench's verifier (bench/verifier.hpp): duplicates, gaps announced and not,
// reordering, and the end-of-run account against what was published.

#include <doctest/doctest.h>

#include "bench/report.hpp"
#include "bench/verifier.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bench_verifier_unit {

using namespace pushonce::bench;

namespace {
// User 1 of 4: its messages are 1, 5, 9, 13, ...
constexpr std::uint64_t users = 4, user = 1;
}  // namespace

TEST_CASE("bench verifier: messages in order are fresh, and the resume point follows them") {
  session_verifier v(user, users);
  v.on_welcome(false, true, "e1", 0, 10);
  CHECK(v.on_message(1, 1) == session_verifier::verdict::fresh);
  CHECK(v.on_message(5, 2) == session_verifier::verdict::fresh);
  CHECK(v.resume_offset() == 2);
  CHECK(v.epoch() == "e1");
  CHECK(v.counts().received == 2);
  CHECK(v.counts().gaps == 0);
  CHECK(v.counts().duplicates == 0);
  CHECK(v.received(5));
  CHECK_FALSE(v.received(9));
}

TEST_CASE("bench verifier: the same message twice is a duplicate, whatever offset it comes with") {
  session_verifier v(user, users);
  v.on_welcome(false, true, "e1", 0, 10);
  v.on_message(1, 1);
  CHECK(v.on_message(1, 1) == session_verifier::verdict::duplicate);
  // Re-published under a new id by a faulty system: a new offset, the same message.
  CHECK(v.on_message(1, 2) == session_verifier::verdict::duplicate);
  CHECK(v.counts().duplicates == 2);
  CHECK(v.counts().received == 1);
  CHECK(v.resume_offset() == 1);
}

TEST_CASE("bench verifier: a skipped offset with no recovered:false is an unannounced gap") {
  session_verifier v(user, users);
  v.on_welcome(false, true, "e1", 0, 10);
  v.on_message(1, 1);
  v.on_message(5, 4);  // offsets 2 and 3 never came
  CHECK(v.counts().gaps == 1);
  CHECK(v.counts().gap_offsets == 2);
  v.on_message(9, 5);
  CHECK(v.counts().gaps == 1);
}

TEST_CASE("bench verifier: a resume honoured continues the offsets; a gap after it counts") {
  session_verifier v(user, users);
  v.on_welcome(false, true, "e1", 0, 10);
  v.on_message(1, 1);
  v.on_disconnect();
  CHECK_FALSE(v.connected());
  v.on_welcome(true, true, "e1", 3, 20);
  CHECK(v.connected());
  CHECK(v.counts().reconnects == 1);
  v.on_message(5, 2);
  v.on_message(9, 3);
  CHECK(v.counts().gaps == 0);
  v.on_message(13, 5);
  CHECK(v.counts().gaps == 1);
}

TEST_CASE("bench verifier: recovered:false announces the gap: the next offset is the new start") {
  session_verifier v(user, users);
  v.on_welcome(false, true, "e1", 0, 10);
  v.on_message(1, 1);
  v.on_disconnect();
  v.on_welcome(true, false, "e2", 7, 50);
  CHECK(v.counts().not_recovered == 1);
  CHECK(v.epoch() == "e2");
  v.on_message(21, 3);  // another epoch: offsets start again wherever the inbox is
  v.on_message(25, 4);
  CHECK(v.counts().gaps == 0);
  CHECK(v.announced_after(49));
  CHECK_FALSE(v.announced_after(50));
}

TEST_CASE("bench verifier: an offset going back on a new message is out of order") {
  session_verifier v(user, users);
  v.on_welcome(false, true, "e1", 0, 10);
  v.on_message(1, 1);
  v.on_message(9, 3);  // 2 skipped for now
  CHECK(v.counts().gaps == 1);
  CHECK(v.on_message(5, 2) == session_verifier::verdict::fresh);
  CHECK(v.counts().out_of_order == 1);
  CHECK(v.resume_offset() == 3);
  CHECK(v.counts().duplicates == 0);
}

TEST_CASE("bench verifier: another user's message is foreign, not counted as received") {
  session_verifier v(user, users);
  v.on_welcome(false, true, "e1", 0, 10);
  CHECK(v.on_message(2, 1) == session_verifier::verdict::foreign);
  v.on_foreign();
  CHECK(v.counts().foreign == 2);
  CHECK(v.counts().received == 0);
}

TEST_CASE("bench ledger: owed, delivered, lost, announced and refused messages") {
  delivery_ledger l(users);
  for (std::uint64_t seq = 0; seq < 16; ++seq) l.sent(seq, static_cast<std::int64_t>(seq) * 100);
  for (std::uint64_t seq = 0; seq < 16; ++seq) l.published(seq);
  l.refused(13);  // an error answer: nothing published
  // Messages of user 1: 1 (due 100), 5 (500), 9 (900), 13 (1300, refused).
  session_verifier late(user, users);
  late.on_welcome(false, true, "e", 0, 300);  // opened after message 1 was due
  late.on_message(5, 1);
  late.on_message(9, 2);
  ledger_totals t;
  l.account(late, t);
  CHECK(t.expected == 2);
  CHECK(t.delivered == 2);
  CHECK(t.lost == 0);

  session_verifier lossy(user, users);
  lossy.on_welcome(false, true, "e", 0, 0);
  lossy.on_message(1, 1);
  lossy.on_message(13, 2);  // the refused one arrived anyway
  ledger_totals t2;
  l.account(lossy, t2);
  CHECK(t2.expected == 3);
  CHECK(t2.delivered == 1);
  CHECK(t2.lost == 2);
  CHECK(t2.delivered_refused == 1);

  session_verifier announced(user, users);
  announced.on_welcome(false, true, "e", 0, 0);
  announced.on_message(1, 1);
  announced.on_disconnect();
  announced.on_welcome(true, false, "e2", 0, 600);  // after 5 was due, before 9
  ledger_totals t3;
  l.account(announced, t3);
  CHECK(t3.delivered == 1);
  CHECK(t3.announced_missing == 1);  // message 5
  CHECK(t3.lost == 1);               // message 9, due after the announcement

  auto m = l.message_totals();
  CHECK(m.published == 15);
  CHECK(m.refused == 1);
  CHECK(m.unknown == 0);
}

TEST_CASE("bench ledger: a message with no answer is owed to nobody") {
  delivery_ledger l(2);
  l.sent(0, 0);
  l.sent(1, 0);
  l.published(1);
  session_verifier v(0, 2);
  v.on_welcome(false, true, "e", 0, 0);
  ledger_totals t;
  l.account(v, t);
  CHECK(t.expected == 0);
  CHECK(l.message_totals().unknown == 1);
}

TEST_CASE("bench report: a run that published nothing, or had publishes refused, fails") {
  run_report r;
  r.mode = "fanout";
  r.sessions = 2;
  r.opened = 2;
  r.requests = 1;
  r.ledger.published = 10;
  CHECK(r.exit_status() == 0);

  // Every publish refused (a 403 from a wrong API key): nothing to verify.
  r.ledger.published = 0;
  r.ledger.refused = 10;
  r.publish_errors["403"] = 1;
  CHECK(r.exit_status() == 1);
  CHECK_FALSE(r.to_json().at("ok").as_bool());
  CHECK(r.table().find("FAILED") != std::string::npos);
  CHECK(r.table().find("10 messages refused") != std::string::npos);
  CHECK(r.table().find("nothing was published") != std::string::npos);

  // Some refused, some published: still a failure, with the reason.
  r.ledger.published = 5;
  r.ledger.refused = 5;
  CHECK(r.exit_status() == 1);
  CHECK(r.to_json().at("failures").as_array().size() == 1);

  // Publishes that never got an answer by the end.
  r.ledger.refused = 0;
  r.ledger.unknown = 3;
  CHECK(r.exit_status() == 1);
  CHECK(r.table().find("3 messages unanswered") != std::string::npos);

  // Nothing published and nothing refused: a run that checked nothing.
  r.ledger.published = 0;
  r.ledger.unknown = 0;
  CHECK(r.exit_status() == 1);

  // A run that sends no publishes (idle, or fanout with --hold only) is judged by its
  // sessions alone.
  run_report idle;
  idle.mode = "idle";
  idle.sessions = 2;
  idle.opened = 2;
  CHECK(idle.exit_status() == 0);
}

}  // namespace test_bench_verifier_unit
