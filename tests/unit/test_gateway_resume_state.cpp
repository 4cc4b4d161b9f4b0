#include <doctest/doctest.h>

#include <string>

#include "gateway/session/resume_state.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_resume_state_unit {

using namespace pushonce::gateway;
using live = resume_state::live_result;

namespace {

resume_state::frame_ptr msg(long long offset, long long id = 0) {
  return std::make_shared<const std::string>(
      R"({"type":"message","id":")" + std::to_string(id ? id : 4096 * offset) + R"(","offset":)" +
      std::to_string(offset) + R"(,"kind":"message","data":{"offset":999},"ts":1})");
}

resume_state::frame_ptr position_frame() {
  return std::make_shared<const std::string>(R"({"type":"position","queue":"q","position":2})");
}

std::vector<long long> offsets(const std::vector<resume_state::frame_ptr>& v) {
  std::vector<long long> out;
  for (auto& f : v) out.push_back(frame_offset(*f).value_or(-1));
  return out;
}

}  // namespace

TEST_CASE("resume: frame_offset reads the worker's frame head") {
  CHECK(frame_offset(*msg(1)) == 1);
  CHECK(frame_offset(*msg(123456789)) == 123456789);
  CHECK_FALSE(frame_offset(*position_frame()));
  CHECK_FALSE(frame_offset(R"({"type":"message","id":"1","offset":x})"));
  CHECK_FALSE(frame_offset(""));
  // "offset" inside data does not count: the head comes first
  CHECK(frame_offset(*msg(5)) == 5);
}

TEST_CASE("resume: plan_resume") {
  using since = std::optional<std::pair<std::string, long long>>;
  auto p = plan_resume(std::nullopt, "E", 10, 4);
  CHECK(p.start == 4);
  CHECK(p.recovered);

  p = plan_resume(since{{"E", 7}}, "E", 10, 4);
  CHECK(p.start == 7);
  CHECK(p.recovered);

  p = plan_resume(since{{"E", 10}}, "E", 10, 4);
  CHECK(p.start == 10);
  CHECK(p.recovered);

  p = plan_resume(since{{"OLD", 7}}, "E", 10, 4);  // another epoch: from the acked offset
  CHECK(p.start == 4);
  CHECK_FALSE(p.recovered);

  p = plan_resume(since{{"E", 50}}, "E", 10, 4);  // beyond the latest: re-sync
  CHECK(p.start == 10);
  CHECK_FALSE(p.recovered);
}

TEST_CASE("resume: replay then buffered live frames, overlap dropped") {
  resume_state r;
  r.begin(3);
  CHECK(r.catching_up());
  // live frames arrive while the inbox is read
  CHECK(r.on_live(msg(6)) == live::buffered);
  CHECK(r.on_live(msg(7)) == live::buffered);
  // the inbox read sees 4..6 (6 was delivered after the subscription)
  CHECK(r.on_replay(4));
  CHECK(r.on_replay(5));
  CHECK(r.on_replay(6));
  CHECK(r.last_sent() == 6);
  auto rest = r.finish_catch_up();
  CHECK(offsets(rest) == std::vector<long long>{7});
  CHECK_FALSE(r.catching_up());
  CHECK(r.last_sent() == 7);
  CHECK(r.on_live(msg(8)) == live::send);
  CHECK(r.last_sent() == 8);
}

TEST_CASE("resume: duplicates are dropped, live and replayed") {
  resume_state r;
  r.begin(5);
  CHECK_FALSE(r.on_replay(5));  // at the start: already seen
  CHECK_FALSE(r.on_replay(2));
  CHECK(r.on_live(msg(3)) == live::drop);  // <= start while catching up
  CHECK(r.on_replay(6));
  CHECK_FALSE(r.on_replay(6));
  CHECK(r.finish_catch_up().empty());
  CHECK(r.on_live(msg(6)) == live::drop);
  CHECK(r.on_live(msg(7)) == live::send);
  CHECK(r.on_live(msg(7)) == live::drop);
  CHECK(r.on_live(msg(1)) == live::drop);
}

TEST_CASE("resume: a gap in the live stream starts a catch-up") {
  resume_state r;
  r.begin(0);
  CHECK(r.finish_catch_up().empty());
  CHECK(r.on_live(msg(1)) == live::send);
  CHECK(r.on_live(msg(4)) == live::gap);  // 2 and 3 were lost by Pub/Sub
  CHECK(r.catching_up());
  CHECK(r.last_sent() == 1);
  CHECK(r.on_live(msg(5)) == live::buffered);
  r.begin_catch_up();  // idempotent
  CHECK(r.on_replay(2));
  CHECK(r.on_replay(3));
  CHECK(r.on_replay(4));
  auto rest = r.finish_catch_up();
  CHECK(offsets(rest) == std::vector<long long>{5});
  CHECK(r.last_sent() == 5);
}

TEST_CASE("resume: a live gap whose inbox read failed sends nothing past the gap") {
  resume_state r;
  r.begin(0);
  r.finish_catch_up();
  CHECK(r.on_live(msg(1)) == live::send);
  CHECK(r.on_live(msg(10)) == live::gap);  // 2..9 were lost by Pub/Sub
  r.begin_catch_up();                      // the inbox read starts ... and fails
  CHECK(r.finish_catch_up().empty());      // 10 is not sent before 2..9
  CHECK(r.last_sent() == 1);
}

TEST_CASE("resume: a catch-up replay that starts past the next offset (trimmed) sends nothing") {
  resume_state r;
  r.begin(0);
  r.finish_catch_up();
  CHECK(r.on_live(msg(1)) == live::send);
  CHECK(r.on_live(msg(21)) == live::gap);
  r.begin_catch_up();
  CHECK_FALSE(r.on_replay(16));  // the inbox holds 16..21 only: 2..15 were trimmed
  CHECK_FALSE(r.on_replay(17));
  CHECK(r.finish_catch_up().empty());
  CHECK(r.last_sent() == 1);
}

TEST_CASE("resume: live frames out of order during a catch-up are sent in offset order") {
  resume_state r;
  r.begin(10);
  CHECK(r.on_live(msg(12)) == live::buffered);
  CHECK(r.on_live(msg(11)) == live::buffered);
  CHECK(offsets(r.finish_catch_up()) == std::vector<long long>{11, 12});
  CHECK(r.last_sent() == 12);
}

TEST_CASE("resume: frames without an offset always pass, in order") {
  resume_state r;
  r.begin(2);
  CHECK(r.on_live(position_frame()) == live::buffered);
  CHECK(r.on_live(msg(3)) == live::buffered);
  CHECK(r.on_replay(3));
  auto rest = r.finish_catch_up();
  CHECK(offsets(rest) == std::vector<long long>{-1});
  CHECK(r.on_live(position_frame()) == live::send);
  CHECK(r.last_sent() == 3);
}

TEST_CASE("resume: the live buffer is bounded") {
  resume_state r(resume_state::limits{3, 1 << 20});
  r.begin(0);
  CHECK(r.on_live(msg(1)) == live::buffered);
  CHECK(r.on_live(msg(2)) == live::buffered);
  CHECK(r.on_live(msg(3)) == live::buffered);
  CHECK(r.on_live(msg(4)) == live::overflow);
  CHECK(r.buffered() == 3);

  resume_state b(resume_state::limits{100, 150});
  b.begin(0);
  CHECK(b.on_live(msg(1)) == live::buffered);
  CHECK(b.on_live(msg(2)) == live::overflow);  // two frames are over 150 bytes
}

TEST_CASE("resume: frame_id reads the worker's frame head") {
  CHECK(frame_id(*msg(3, 77)) == "77");
  CHECK(frame_id(*position_frame()).empty());
  CHECK(frame_id(R"({"type":"message","id":"12)").empty());  // cut short
  CHECK(frame_id("").empty());
}

TEST_CASE("resume: offsets_went_back compares the stored counter and epoch") {
  CHECK_FALSE(offsets_went_back("E", 10, "E", 10));
  CHECK_FALSE(offsets_went_back("E", 10, "E", 12));
  CHECK(offsets_went_back("E", 10, "E", 9));    // the counter is behind what was sent
  CHECK(offsets_went_back("E", 10, "E2", 12));  // another session rotated the epoch
  CHECK(offsets_went_back("E", 0, "", 0));      // the meta hash is gone
}

TEST_CASE("resume: an offset sent again with another id means the offsets went back") {
  resume_state r;
  r.begin(0);
  CHECK(r.finish_catch_up().empty());
  CHECK(r.on_live(msg(1, 101)) == live::send);
  CHECK(r.on_live(msg(2, 102)) == live::send);
  CHECK(r.on_live(msg(3, 103)) == live::send);
  // the same frame again (Pub/Sub after a catch-up, or the outbox re-drove it to its old
  // offset): a plain duplicate
  CHECK(r.on_live(msg(3, 103)) == live::drop);
  CHECK_FALSE(r.regressed());
  // a promoted replica had only 1: it hands out 2 again, to another message
  CHECK(r.on_live(msg(2, 202)) == live::regressed);
  CHECK(r.regressed());
}

TEST_CASE("resume: offsets going back are seen in a catch-up and in the buffer") {
  resume_state r;
  r.begin(0);
  CHECK(r.on_replay(1, "11"));
  CHECK(r.on_replay(2, "12"));
  CHECK(r.finish_catch_up().empty());
  r.begin_catch_up();                          // a subscriber reconnect
  CHECK(r.on_live(msg(2, 12)) == live::drop);  // buffered duplicate: same id
  CHECK(r.on_live(msg(3, 13)) == live::buffered);
  CHECK_FALSE(r.on_replay(1, "11"));
  CHECK_FALSE(r.regressed());
  CHECK_FALSE(r.on_replay(2, "99"));  // the inbox now holds another message at 2
  CHECK(r.regressed());
  CHECK(offsets(r.finish_catch_up()) == std::vector<long long>{3});
}

TEST_CASE("resume: a buffered frame at an offset sent with another id sets regressed") {
  resume_state r;
  r.begin(0);
  CHECK(r.on_live(msg(1, 50)) == live::buffered);
  CHECK(r.on_replay(1, "50"));
  CHECK(r.on_replay(2, "51"));
  // buffered: both at an offset <= last sent; the second has another id
  resume_state q;
  q.begin(0);
  CHECK(q.on_live(msg(2, 52)) == live::buffered);
  CHECK(q.on_replay(1, "60"));
  CHECK(q.on_replay(2, "61"));
  CHECK(q.finish_catch_up().empty());
  CHECK(q.regressed());
  CHECK(r.finish_catch_up().empty());
  CHECK_FALSE(r.regressed());
}

TEST_CASE("resume: offsets older than the remembered ids are plain duplicates") {
  resume_state r;
  r.begin(0);
  r.finish_catch_up();
  for (long long o = 1; o <= 200; ++o) REQUIRE(r.on_live(msg(o, 1000 + o)) == live::send);
  CHECK(r.on_live(msg(10, 7)) == live::drop);  // its id is no longer known
  CHECK(r.on_live(msg(190, 7)) == live::regressed);
  r.begin(0);  // a new session forgets it all
  CHECK_FALSE(r.regressed());
}

}  // namespace test_gateway_resume_state_unit

namespace test_gateway_resume_state_unit {

TEST_CASE("resume: a hole before a frame heard during the read waits for another pass") {
  resume_state r;
  r.begin(0);
  r.finish_catch_up();
  CHECK(r.on_live(msg(1)) == live::send);
  CHECK(r.on_live(msg(3)) == live::gap);
  r.begin_catch_up();
  CHECK(r.on_replay(2));
  CHECK(r.on_replay(3));
  CHECK(r.on_live(msg(5)) == live::buffered);  // heard while the read was out; 4 missing
  CHECK(r.finish_catch_up().empty());
  CHECK(r.catching_up());  // one more pass
  CHECK_FALSE(r.lost());
  CHECK(r.on_live(msg(6)) == live::buffered);
  r.begin_catch_up();
  CHECK(r.on_replay(4));
  CHECK(offsets(r.finish_catch_up()) == std::vector<long long>{5, 6});
  CHECK_FALSE(r.catching_up());
  CHECK(r.on_live(msg(7)) == live::send);

  // The same hole, and the next pass's read does not reach it: lost.
  resume_state q;
  q.begin(0);
  q.finish_catch_up();
  CHECK(q.on_live(msg(1)) == live::send);
  CHECK(q.on_live(msg(3)) == live::gap);
  q.begin_catch_up();
  CHECK(q.on_replay(2));
  CHECK(q.on_replay(3));
  CHECK(q.on_live(msg(5)) == live::buffered);
  CHECK(q.finish_catch_up().empty());
  q.begin_catch_up();
  CHECK(q.finish_catch_up().empty());  // the inbox ended at 3 (4 trimmed away)
  CHECK(q.lost());
  CHECK(q.last_sent() == 3);
}

TEST_CASE("resume: once lost nothing more is sent, live or replayed") {
  resume_state r;
  r.begin(0);
  r.finish_catch_up();
  CHECK(r.on_live(msg(1)) == live::send);
  CHECK(r.on_live(msg(5)) == live::gap);
  r.begin_catch_up();
  CHECK_FALSE(r.on_replay(4));  // 2 and 3 trimmed
  CHECK(r.lost());
  CHECK_FALSE(r.on_replay(5));
  CHECK(r.finish_catch_up().empty());
  CHECK(r.catching_up());
  CHECK(r.on_live(msg(6)) != live::send);
  CHECK(r.last_sent() == 1);
  r.begin(7);  // a new session start clears it
  CHECK_FALSE(r.lost());
}

TEST_CASE("resume: plan_welcome owns up to what the first page shows is gone") {
  resume_plan p{3, true};
  auto w = plan_welcome(p, 10, 4);  // the inbox holds 4..: nothing lost
  CHECK(w.recovered);
  CHECK(w.skip_to == 3);
  w = plan_welcome(p, 10, 7);  // 4..6 trimmed
  CHECK_FALSE(w.recovered);
  CHECK(w.skip_to == 6);
  w = plan_welcome(p, 3, std::nullopt);  // nothing after the start, nothing delivered since
  CHECK(w.recovered);
  CHECK(w.skip_to == 3);
  w = plan_welcome(p, 10, std::nullopt);  // 4..10 delivered and gone (expired, trimmed)
  CHECK_FALSE(w.recovered);
  CHECK(w.skip_to == 10);
  w = plan_welcome(resume_plan{3, false}, 10, 4);  // another epoch: recovered false anyway
  CHECK_FALSE(w.recovered);
  CHECK(w.skip_to == 3);

  // The session then replays from the first entry there is, without a gap.
  resume_state r;
  r.begin(3);
  r.skip_to(plan_welcome(p, 10, 7).skip_to);
  CHECK(r.on_replay(7));
  CHECK_FALSE(r.lost());
}

}  // namespace test_gateway_resume_state_unit
