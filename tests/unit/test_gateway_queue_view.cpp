#include "gateway/queue/queue_view.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "gateway/queue/queue_event.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_queue_view_unit {

using pushonce::gateway::parse_queue_event;
using pushonce::gateway::queue_view;
using kind = queue_view::standing::kind;

namespace {

long long pos(const queue_view& v, long long ticket) {
  auto s = v.at(ticket);
  return s.state == kind::waiting ? s.position : -1;
}

void removed(queue_view& v, long long seq, std::vector<long long> tickets) {
  v.on_event(seq, true, tickets);
}
void joined(queue_view& v, long long seq, long long ticket) {
  std::vector<long long> t{ticket};
  v.on_event(seq, false, t);
}

}  // namespace

TEST_CASE("queue event: parse joins, removals, bare names and garbage") {
  auto j = parse_queue_event("default 7 j 12");
  REQUIRE(j);
  CHECK(j->queue == "default");
  CHECK(j->seq == 7);
  CHECK_FALSE(j->removal);
  CHECK(j->tickets == std::vector<long long>{12});
  auto r = parse_queue_event("q.1 8 r 3 5 9");
  REQUIRE(r);
  CHECK(r->removal);
  CHECK(r->tickets == std::vector<long long>{3, 5, 9});
  CHECK_FALSE(parse_queue_event("default"));  // resources changed: no positions moved
  CHECK_FALSE(parse_queue_event(""));
  CHECK_FALSE(parse_queue_event("default x j 1"));
  CHECK_FALSE(parse_queue_event("default 0 j 1"));
  CHECK_FALSE(parse_queue_event("default 3 z 1"));
  CHECK_FALSE(parse_queue_event("default 3 r 1 -2"));
  CHECK_FALSE(parse_queue_event("default 3 r 1 2x"));
}

TEST_CASE("queue event: an opening's moved users (position and ticket of the first)") {
  auto m = parse_queue_event("q 9 m 4 17 alice bob carol");
  REQUIRE(m);
  CHECK(m->seq == 9);
  CHECK_FALSE(m->removal);
  CHECK(m->tickets.empty());  // to the view: joins at the tail, nobody waiting moves
  REQUIRE(m->moved);
  CHECK(m->moved->position == 4);
  CHECK(m->moved->ticket == 17);
  CHECK(m->moved->users == std::vector<std::string>{"alice", "bob", "carol"});
  CHECK_FALSE(parse_queue_event("q 9 m 4 17"));
  CHECK_FALSE(parse_queue_event("q 9 m 4"));
  CHECK_FALSE(parse_queue_event("q 9 m 0 17 alice"));
  CHECK_FALSE(parse_queue_event("q 9 m 4 17 alice  bob"));
  CHECK_FALSE(parse_queue_event("q 9 j 4")->moved);
}

TEST_CASE("queue view: removals below a ticket move it up, above it do not, its own ends it") {
  queue_view v;
  v.watch(10, 5, 100);  // ticket 10 is 5th just after event 100
  CHECK(v.seq() == 100);
  CHECK(pos(v, 10) == 5);
  removed(v, 101, {3});
  CHECK(pos(v, 10) == 4);
  joined(v, 102, 11);
  CHECK(pos(v, 10) == 4);
  removed(v, 103, {11, 12});  // behind it
  CHECK(pos(v, 10) == 4);
  removed(v, 104, {1, 2, 4});
  CHECK(pos(v, 10) == 1);
  removed(v, 105, {10});
  CHECK(v.at(10).state == kind::gone);
  CHECK_FALSE(v.needs_resync());
}

TEST_CASE("queue view: a reply older than the view is brought forward with the recent events") {
  queue_view v;
  v.watch(50, 20, 10);
  removed(v, 11, {5});
  joined(v, 12, 60);
  removed(v, 13, {6, 7, 55});
  // A join reply for ticket 60 true just after event 12 (position 17), heard after event 13.
  v.watch(60, 17, 12);
  CHECK(pos(v, 60) == 14);  // 6, 7 and 55 left ahead of it
  CHECK(pos(v, 50) == 17);
  // A reply for a ticket that left meanwhile is gone at once.
  v.watch(55, 16, 12);
  CHECK(v.at(55).state == kind::gone);
  CHECK_FALSE(v.needs_resync());
}

TEST_CASE("queue view: a reply newer than the view waits for the events before it") {
  queue_view v;
  v.watch(10, 3, 5);
  v.watch(20, 4, 7);  // just after event 7: the view has only seen 5
  CHECK(v.at(20).state == kind::unknown);
  removed(v, 6, {1});
  CHECK(v.at(20).state == kind::unknown);
  CHECK(pos(v, 10) == 2);
  joined(v, 7, 20);
  CHECK(pos(v, 20) == 4);  // taken as it is at event 7
  removed(v, 8, {2});
  CHECK(pos(v, 20) == 3);
  CHECK(pos(v, 10) == 1);
}

TEST_CASE("queue view: a gap asks for one re-read; events during it are replayed after") {
  queue_view v;
  v.watch(10, 5, 1);
  v.watch(20, 9, 1);
  removed(v, 2, {1});
  CHECK_FALSE(v.needs_resync());
  removed(v, 4, {3});  // event 3 was lost
  CHECK(v.needs_resync());
  CHECK(pos(v, 10) == 4);  // the last known value until the re-read answers
  auto asked = v.begin_resync();
  CHECK_FALSE(v.needs_resync());  // one re-read at a time
  std::sort(asked.begin(), asked.end());
  CHECK(asked == std::vector<long long>{10, 20});
  removed(v, 5, {4});  // heard while the re-read is out
  removed(v, 6, {12});
  // The re-read is true just after event 5: 10 stands 2nd, 20 stands 6th.
  std::vector<queue_view::resync_item> items{{10, 2}, {20, 6}};
  v.resynced(5, asked, items);
  CHECK(v.seq() == 6);     // event 6 replayed, 4 and 5 dropped as already counted
  CHECK(pos(v, 10) == 2);  // 12 is behind it
  CHECK(pos(v, 20) == 5);
  CHECK_FALSE(v.needs_resync());
}

TEST_CASE("queue view: an event number heard again (the counter went back) asks for a re-read") {
  queue_view v;
  v.watch(10, 5, 1);
  removed(v, 2, {1});
  removed(v, 3, {2});
  CHECK(pos(v, 10) == 3);
  // A failover lost increment 3 of the counter: the next leave is numbered 3 again. Each
  // number is heard once per subscription, so hearing 3 twice means the numbers went back.
  removed(v, 3, {4});
  CHECK(v.needs_resync());
  auto asked = v.begin_resync();
  CHECK(asked == std::vector<long long>{10});
  std::vector<queue_view::resync_item> items{{10, 2}};
  v.resynced(3, asked, items);
  CHECK(pos(v, 10) == 2);
  removed(v, 4, {5});  // numbered on from the counter as it is now: applied
  CHECK(pos(v, 10) == 1);
  CHECK_FALSE(v.needs_resync());
}

TEST_CASE("queue view: events older than a re-read, heard after it, are not a counter going back") {
  queue_view v;
  v.watch(10, 5, 1);
  removed(v, 2, {1});
  v.lost_events();
  auto asked = v.begin_resync();
  std::vector<queue_view::resync_item> items{{10, 2}};
  v.resynced(4, asked, items);  // true after event 4; events 3 and 4 are heard only now
  removed(v, 3, {2});
  removed(v, 4, {3});
  CHECK_FALSE(v.needs_resync());
  CHECK(pos(v, 10) == 2);
  removed(v, 4, {6});  // 4 again: the counter went back
  CHECK(v.needs_resync());
}

TEST_CASE("queue view: a re-read drops tickets its users no longer wait with") {
  queue_view v;
  v.watch(10, 5, 1);
  v.lost_events();
  REQUIRE(v.needs_resync());
  auto asked = v.begin_resync();
  std::vector<queue_view::resync_item> items{{30, 7}};  // left, joined again elsewhere as 30
  v.resynced(9, asked, items);
  CHECK(v.at(10).state == kind::gone);
  CHECK(pos(v, 30) == 7);
  CHECK_FALSE(v.needs_resync());
}

TEST_CASE("queue view: a reply older than the ring asks for a re-read; a failed one asks again") {
  queue_view v(2);  // two events kept
  v.watch(100, 50, 1);
  for (long long s = 2; s <= 6; ++s) removed(v, s, {s});
  v.watch(200, 90, 2);  // events 3..6 needed, only 5 and 6 kept
  CHECK(v.at(200).state == kind::unknown);
  CHECK(v.needs_resync());
  auto asked = v.begin_resync();
  CHECK(asked.size() == 2);
  v.resync_failed();
  CHECK(v.needs_resync());
}

TEST_CASE("queue view: watches during a re-read are settled when it answers") {
  queue_view v;
  v.watch(10, 3, 1);
  v.lost_events();
  auto asked = v.begin_resync();
  v.watch(40, 9, 4);  // joined while the re-read was out, true just after event 4
  v.watch(41, 10, 6);
  std::vector<queue_view::resync_item> items{{10, 2}};
  v.resynced(4, asked, items);
  CHECK(pos(v, 40) == 9);
  CHECK(v.at(41).state == kind::unknown);  // waits for events 5 and 6
  removed(v, 5, {1});
  joined(v, 6, 41);
  CHECK(pos(v, 41) == 10);
  CHECK(pos(v, 40) == 8);
  CHECK(pos(v, 10) == 1);
}

TEST_CASE("queue view: many removals rebase without changing any position") {
  queue_view v;
  v.watch(100000, 100000, 1);
  v.watch(200000, 200000, 1);
  long long seq = 1;
  for (long long t = 1; t < 100000; t += 10) {
    std::vector<long long> batch;
    for (long long k = t; k < t + 10 && k < 100000; ++k) batch.push_back(k);
    removed(v, ++seq, batch);
  }
  CHECK(pos(v, 100000) == 1);
  CHECK(pos(v, 200000) == 100001);
  CHECK(v.removed_kept() <= 4096 + 4);
}

// A model queue against the view, with replies that arrive late and out of step with the
// events: after every step, every active watched ticket stands where the model says.
TEST_CASE("queue view: random joins, leaves, batched assignments and late replies") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    std::vector<long long> queue;  // waiting tickets, in order
    long long next_ticket = 0, seq = 0;
    queue_view v(64);
    struct reply {
      long long ticket, position, seq;
    };
    std::vector<reply> late;
    std::vector<long long> watched;
    auto rank = [&](long long t) {
      auto it = std::find(queue.begin(), queue.end(), t);
      return it == queue.end() ? 0LL : static_cast<long long>(it - queue.begin()) + 1;
    };
    for (int step = 0; step < 400; ++step) {
      auto dice = rng() % 10;
      if (dice < 5) {  // a join; this gateway watches some, its reply heard late or early
        auto t = ++next_ticket;
        queue.push_back(t);
        joined(v, ++seq, t);
        if (rng() % 2) late.push_back({t, rank(t), seq});
      } else if (dice < 7 && !queue.empty()) {  // a leave
        auto i = rng() % queue.size();
        auto t = queue[i];
        queue.erase(queue.begin() + static_cast<long>(i));
        removed(v, ++seq, {t});
      } else if (dice < 8 && !queue.empty()) {  // a batch of assignments from the head
        auto n = std::min<std::size_t>(queue.size(), 1 + rng() % 7);
        std::vector<long long> head(queue.begin(), queue.begin() + static_cast<long>(n));
        queue.erase(queue.begin(), queue.begin() + static_cast<long>(n));
        removed(v, ++seq, head);
      } else if (!late.empty()) {  // a late reply reaches the view
        auto r = late.front();
        late.erase(late.begin());
        v.watch(r.ticket, r.position, r.seq);
        watched.push_back(r.ticket);
      }
      if (v.needs_resync()) {
        auto asked = v.begin_resync();
        std::vector<queue_view::resync_item> items;
        for (auto t : asked) items.push_back({t, rank(t)});
        v.resynced(seq, asked, items);
      }
      for (auto t : watched) {
        auto s = v.at(t);
        if (s.state == kind::waiting) CHECK(s.position == rank(t));
        if (s.state == kind::gone) CHECK(rank(t) == 0);
      }
    }
  }
}

}  // namespace test_gateway_queue_view_unit

namespace test_gateway_queue_view_unit {

TEST_CASE("queue view: reread_chunks bounds every call of a re-read") {
  using pushonce::gateway::reread_chunks;
  using ranges = std::vector<std::pair<std::size_t, std::size_t>>;
  CHECK(reread_chunks(0, 5000).empty());
  CHECK(reread_chunks(1, 5000) == ranges{{0, 1}});
  CHECK(reread_chunks(5000, 5000) == ranges{{0, 5000}});
  CHECK(reread_chunks(12001, 5000) == ranges{{0, 5000}, {5000, 10000}, {10000, 12001}});
  CHECK(reread_chunks(3, 0) == ranges{{0, 1}, {1, 2}, {2, 3}});
  auto many = reread_chunks(100001, 5000);
  CHECK(many.size() == 21);
  CHECK(many.back() == std::pair<std::size_t, std::size_t>{100000, 100001});
}

TEST_CASE("queue view: a re-read in parts true at different events settles every ticket") {
  queue_view v;
  v.watch(10, 5, 1);
  v.watch(20, 9, 1);
  v.watch(30, 12, 1);
  v.lost_events();
  auto asked = v.begin_resync();
  // Part 1 is read just after event 5, part 2 just after event 7; events 6 and 7 are heard
  // while the re-read is out (held), event 8 after it.
  removed(v, 6, {4});
  removed(v, 7, {15});
  std::vector<queue_view::resync_part> parts{{5, {{10, 3}, {20, 7}}}, {7, {{30, 8}}}};
  v.resynced(asked, parts);
  CHECK(v.seq() == 7);
  CHECK(pos(v, 10) == 2);  // 4 left at 6
  CHECK(pos(v, 20) == 5);  // 4 at 6 and 15 at 7
  CHECK(pos(v, 30) == 8);  // as read after 7
  removed(v, 8, {10});
  CHECK(v.at(10).state == kind::gone);
  CHECK(pos(v, 20) == 4);
  CHECK(pos(v, 30) == 7);
  CHECK_FALSE(v.needs_resync());
}

TEST_CASE("queue view: a later part's tickets wait for the events not heard yet") {
  queue_view v;
  v.watch(10, 5, 1);
  v.watch(30, 12, 1);
  v.lost_events();
  auto asked = v.begin_resync();
  std::vector<queue_view::resync_part> parts{{5, {{10, 3}}}, {6, {{30, 9}, {31, 0}}}};
  v.resynced(asked, parts);  // event 6 is still on its way
  CHECK(pos(v, 10) == 3);
  CHECK(v.at(30).state == kind::unknown);
  removed(v, 6, {2});
  CHECK(pos(v, 10) == 2);
  CHECK(pos(v, 30) == 9);  // true just after 6: not moved again
  CHECK_FALSE(v.needs_resync());
}

}  // namespace test_gateway_queue_view_unit
