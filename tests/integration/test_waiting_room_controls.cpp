// The waiting room's run-time controls against a real redis-server: settings.lua (pause,
// resume, close, open, the cap), what join.lua and assign.lua make of them, the pre-queue
// (join, standing, leave) and the opening (opening_draw.lua, opening_move.lua): shuffled
// batches under the fencing token, a resumed opening that finishes with every user once.
#include "core/lua/settings.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/lua/opening.hpp"
#include "core/queue_api.hpp"
#include "core/queue_refusals.hpp"
#include "core/redis/scripts.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_waiting_room_controls_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::errc;
using pushonce::queue_api;
using pushonce::queue_settings;
using pushonce::lua::settings_call;
using pushonce::lua::settings_op;
using pushonce::test::cmd;
using pushonce::test::received;
using pushonce::test::redis_fixture;

namespace {

settings_call change(settings_op op, std::string queue = "q") {
  settings_call c;
  c.queue = std::move(queue);
  c.op = op;
  return c;
}

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> users_named(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

std::vector<long long> random_keys(std::mt19937_64& rng, long long n) {
  std::vector<long long> out;
  for (long long i = 0; i < n; ++i) out.push_back(static_cast<long long>(rng() >> 15));
  return out;
}

}  // namespace

TEST_CASE("settings: not_found for an unknown queue, defaults, set, pause/resume, close/open") {
  received wakes;  // before the fixture: its teardown may still deliver to it
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  auto sub = fx.subscriber(wakes);
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto unknown, api.settings(change(settings_op::get)));
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().code == errc::not_found);
    CO_LET(auto nothing, fx.conn->exec(cmd({"EXISTS", "t:{q:q}:settings"})));
    CHECK(nothing.value.integer == 0);

    std::vector<std::string> queues{"q"};
    CO_LET(auto reg, api.register_queues(queues, 30000));
    REQUIRE(reg);
    std::string ch = fx.k.wake_channel();
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);
    CO_LET(auto names, api.registered_queues());
    CHECK(names.value() == std::vector<std::string>{"q"});

    CO_LET(auto got, api.settings(change(settings_op::get)));
    REQUIRE(got);
    CHECK(got.value().default_accept_timeout_ms == 30000);
    CHECK(got.value().settings.state == queue_settings::state_kind::open);
    CHECK(got.value().settings.abandon_after_s == 300);

    auto set = change(settings_op::set);
    set.fields = {{"max_waiting", "2"}, {"accept_timeout_s", "7"}};
    CO_LET(auto s1, api.settings(set));
    REQUIRE(s1);
    CHECK(s1.value().settings.max_waiting == 2);
    CHECK(s1.value().settings.accept_timeout_s == 7);
    auto bad = change(settings_op::set);
    bad.fields = {{"state", "open"}};
    CO_LET(auto refused, api.settings(bad));
    CHECK(refused.error().code == errc::bad_request);
    bad.fields = {{"max_waiting", "-1"}};
    CO_LET(auto refused2, api.settings(bad));
    CHECK(refused2.error().code == errc::bad_request);

    // The cap counts waiting users.
    CO_LET(auto a, api.join("q", "a"));
    CO_LET(auto b, api.join("q", "b"));
    REQUIRE(a);
    REQUIRE(b);
    CO_LET(auto c, api.join("q", "c"));
    REQUIRE_FALSE(c);
    CHECK(c.error().code == pushonce::errc_full);
    CO_LET(auto leave, api.leave("q", "a"));
    REQUIRE(leave);
    CO_LET(auto c2, api.join("q", "c"));
    CHECK(c2.has_value());

    // Closed: refused, counted; waiting users keep their places.
    CO_LET(auto closed, api.settings(change(settings_op::close)));
    CHECK(closed.value().settings.state == queue_settings::state_kind::closed);
    CO_LET(auto d, api.join("q", "d"));
    CHECK(d.error().code == pushonce::errc_closed);
    CO_LET(auto e, api.join("q", "e"));
    CHECK(e.error().code == pushonce::errc_closed);
    CO_LET(auto stats,
           fx.conn->exec(cmd({"HMGET", "t:{q:q}:stats", "refused_closed", "refused_full"})));
    CHECK(stats.value.elements.at(0).str == "2");
    CHECK(stats.value.elements.at(1).str == "1");
    CO_LET(auto still, api.position("q", "b"));
    CHECK(still.value() == 1);

    CO_LET(auto opened, api.settings(change(settings_op::open)));
    CHECK(opened.value().settings.state == queue_settings::state_kind::open);
    auto uncap = change(settings_op::set);
    uncap.fields = {{"max_waiting", "0"}};
    CO_LET(auto s2, api.settings(uncap));
    CHECK(s2.value().settings.max_waiting == 0);
    CO_LET(auto d2, api.join("q", "d"));
    CHECK(d2.has_value());

    CO_LET(auto paused, api.settings(change(settings_op::pause)));
    CHECK(paused.value().settings.paused);
    CO_LET(auto resumed, api.settings(change(settings_op::resume)));
    CHECK_FALSE(resumed.value().settings.paused);
    // Every change told the leader (a bare queue name on the wake channel).
    co_await pushonce::test::co_wait_until(
        [&] {
          auto p = wakes.payloads(fx.k.wake_channel());
          return std::count(p.begin(), p.end(), "q") >= 6;
        },
        5s);
    auto p = wakes.payloads(fx.k.wake_channel());
    CHECK(std::count(p.begin(), p.end(), "q") >= 6);
  });
}

TEST_CASE("assign: nothing while paused; the queue's accept timeout replaces the leader's") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{"q"};
    CO_DO(api.register_queues(queues));
    CO_LET(auto src, api.source_index("q"));
    std::vector<std::string> ids{"r1", "r2"};
    CO_DO(api.add_resources("q", ids, ""));
    CO_DO(api.join("q", "alice"));
    CO_DO(api.join("q", "bob"));
    CO_DO(api.settings(change(settings_op::pause)));
    CO_LET(auto none, api.assign_batch("q", src.value(), 1, 0, 10));
    REQUIRE(none);
    CHECK(none.value().empty());
    CO_LET(auto waiting, api.position("q", "alice"));
    CHECK(waiting.value() == 1);

    auto set = change(settings_op::set);
    set.fields = {{"accept_timeout_s", "60"}};
    CO_DO(api.settings(set));
    CO_DO(api.settings(change(settings_op::resume)));
    auto before = wall_ms();
    CO_LET(auto two, api.assign_batch("q", src.value(), 1, 0, 10));
    REQUIRE(two);
    CHECK(two.value().size() == 2);
    CO_LET(auto deadline, fx.conn->exec(cmd({"ZSCORE", "t:{q:q}:pending", "alice"})));
    REQUIRE(deadline.value.is_string());
    auto accept_by = std::stoll(deadline.value.str);
    CHECK(accept_by >= before + 59000);
    CHECK(accept_by <= wall_ms() + 61000);
    // The rate hash: the bucket of now, and the first and last assignment.
    CO_LET(auto rate, fx.conn->exec(cmd({"HMGET", "t:{q:q}:rate", "first", "last",
                                         std::to_string(wall_ms() / 10000)})));
    CHECK(rate.value.elements.at(0).is_string());
    CHECK(rate.value.elements.at(1).is_string());
  });
}

TEST_CASE("pre-queue: join answers opens_at, standing, leave; opens_at must be in the future") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{"q"};
    CO_DO(api.register_queues(queues));
    CO_DO(api.join("q", "early"));  // waiting before the pre-queue was scheduled
    auto past = change(settings_op::open);
    past.opens_at = wall_ms() - 1000;
    CO_LET(auto refused, api.settings(past));
    CHECK(refused.error().code == errc::bad_request);

    auto at = wall_ms() + 3'600'000;
    auto open = change(settings_op::open);
    open.opens_at = at;
    open.shuffle = true;
    CO_LET(auto s, api.settings(open));
    REQUIRE(s);
    CHECK(s.value().settings.state == queue_settings::state_kind::prequeue);
    CHECK(s.value().settings.opens_at == at);
    CHECK(s.value().settings.shuffle);

    CO_LET(auto j, api.join("q", "alice"));
    REQUIRE(j);
    CHECK(j.value().position == 0);
    CHECK(j.value().opens_at == at);
    CO_LET(auto again, api.join("q", "alice"));
    CHECK(again.error().code == errc::already_queued);
    CO_LET(auto early_again, api.join("q", "early"));
    CHECK(early_again.error().code == errc::already_queued);

    CO_LET(auto st, api.standing("q", "alice"));
    REQUIRE(st);
    CHECK(st.value().prequeued);
    CHECK(st.value().position == 0);
    CHECK(st.value().opens_at == at);
    CO_LET(auto early, api.standing("q", "early"));
    CHECK(early.value().position == 1);
    CO_LET(auto nobody, api.standing("q", "nobody"));
    CHECK_FALSE(nobody.value().prequeued);
    CHECK(nobody.value().position == 0);

    CO_LET(auto got, api.settings(change(settings_op::get)));
    CHECK(got.value().prequeue_length == 1);
    CO_DO(api.leave("q", "alice"));
    CO_LET(auto gone, api.standing("q", "alice"));
    CHECK_FALSE(gone.value().prequeued);
    CO_LET(auto left, api.leave("q", "alice"));
    CHECK(left.error().code == errc::not_queued);

    // The cap counts the pre-queue too.
    auto cap = change(settings_op::set);
    cap.fields = {{"max_waiting", "2"}};
    CO_DO(api.settings(cap));
    CO_DO(api.join("q", "bob"));
    CO_LET(auto full, api.join("q", "carol"));
    CHECK(full.error().code == pushonce::errc_full);
  });
}

TEST_CASE("opening: shuffled batches under the fencing token; resumed, every user exactly once") {
  received wakes;  // before the fixture: its teardown may still deliver to it
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  auto sub = fx.subscriber(wakes);
  const int n = 2500;
  fx.run(
      [&]() -> asio::awaitable<void> {
        std::vector<std::string> queues{"q"};
        CO_DO(api.register_queues(queues));
        std::string ch = fx.k.wake_channel();
        CO_DO(sub->subscribe(std::move(ch)));
        CO_DO(api.join("q", "before"));  // waits already: stays first
        auto open = change(settings_op::open);
        // Far enough ahead for 2500 joins to finish before it, also under ASan on a busy
        // box (at 400 ms the ASan tier's joins ran past it and the opening was already due).
        const auto at = wall_ms() + 3000;
        open.opens_at = at;
        open.shuffle = true;
        CO_DO(api.settings(open));
        auto users = users_named("u", n);
        for (auto& u : users) {
          CO_LET(auto j, api.join("q", u));
          REQUIRE(j);
          REQUIRE(j.value().position == 0);
        }
        std::mt19937_64 rng(42);
        // Not yet due: nothing happens.
        CO_LET(auto early,
               pushonce::lua::run_script(*fx.conn, pushonce::lua::opening_draw_for(
                                                       fx.k, "q", 5, 0, random_keys(rng, 1000))));
        REQUIRE(early.ok());
        CHECK_FALSE(pushonce::lua::parse_opening_draw_reply(early.value)->due);
        CO_DO(pushonce::test::co_wait_for(
            "the opening due", [&] { return wall_ms() >= at + 20; }, 10s, 20ms));

        // Leader 5 draws one page, moves one batch (wrong: not everyone is drawn: refused),
        // then is "killed".
        CO_LET(auto d1,
               pushonce::lua::run_script(*fx.conn, pushonce::lua::opening_draw_for(
                                                       fx.k, "q", 5, 0, random_keys(rng, 1000))));
        REQUIRE(d1.ok());
        auto p1 = pushonce::lua::parse_opening_draw_reply(d1.value);
        CHECK(p1->drawn == 1000);
        CHECK_FALSE(p1->done);
        CO_LET(auto m0, pushonce::lua::run_script(
                            *fx.conn, pushonce::lua::opening_move_for(fx.k, "q", 5, 1000)));
        CHECK(pushonce::lua::parse_opening_move_reply(m0.value)->undrawn);
        // A join now (after the opening time) goes behind the shuffled ones.
        CO_LET(auto late, api.join("q", "late"));
        CHECK(late.value().position == 0);

        // Leader 6 takes over: starts over; the first page is drawn already.
        long long after = 0, drawn = 0;
        for (;;) {
          CO_LET(auto d, pushonce::lua::run_script(
                             *fx.conn, pushonce::lua::opening_draw_for(fx.k, "q", 6, after,
                                                                       random_keys(rng, 1000))));
          REQUIRE(d.ok());
          auto p = pushonce::lua::parse_opening_draw_reply(d.value);
          drawn += p->drawn;
          after = p->after;
          if (p->done) break;
        }
        CHECK(drawn == n - 1000);
        // Leader 5 is fenced from now on.
        CO_LET(auto fenced_move, pushonce::lua::run_script(
                                     *fx.conn, pushonce::lua::opening_move_for(fx.k, "q", 5, 10)));
        REQUIRE(fenced_move.value.is_error());
        CHECK(fenced_move.value.error_code() == "fenced");
        CO_LET(auto fenced_draw,
               pushonce::lua::run_script(*fx.conn, pushonce::lua::opening_draw_for(
                                                       fx.k, "q", 5, 0, random_keys(rng, 10))));
        CHECK(fenced_draw.value.error_code() == "fenced");

        // One batch by leader 6, then "killed" again; leader 7 finishes.
        CO_LET(auto m1, pushonce::lua::run_script(
                            *fx.conn, pushonce::lua::opening_move_for(fx.k, "q", 6, 1000)));
        auto r1 = pushonce::lua::parse_opening_move_reply(m1.value);
        CHECK(r1->moved == 1000);
        CHECK(r1->left == n + 1 - 1000);
        long long moved = r1->moved, calls = 1;
        for (long long from = 0;;) {
          CO_LET(auto again, pushonce::lua::run_script(
                                 *fx.conn, pushonce::lua::opening_draw_for(
                                               fx.k, "q", 7, from, random_keys(rng, 1000))));
          REQUIRE(again.ok());
          auto p = pushonce::lua::parse_opening_draw_reply(again.value);
          CHECK(p->drawn == 0);  // nothing missing
          from = p->after;
          if (p->done) break;
        }
        for (;;) {
          CO_LET(auto m, pushonce::lua::run_script(
                             *fx.conn, pushonce::lua::opening_move_for(fx.k, "q", 7, 1000)));
          REQUIRE(m.ok());
          auto r = pushonce::lua::parse_opening_move_reply(m.value);
          moved += r->moved;
          ++calls;
          if (r->left == 0) break;
        }
        CHECK(moved == n + 1);
        CHECK(calls == 3 + 1);  // 2501 users: 1000 + 1000 + 500 + the late one

        // Everyone exactly once, "before" first, "late" last, tickets contiguous.
        CO_LET(auto all,
               fx.conn->exec(cmd({"ZRANGE", "t:{q:q}:waiting", "0", "-1", "WITHSCORES"})));
        const auto& e = all.value.elements;
        REQUIRE(e.size() == 2 * static_cast<std::size_t>(n + 2));
        std::set<std::string> seen;
        for (std::size_t i = 0; i < e.size(); i += 2) {
          seen.insert(e[i].str);
          CHECK(std::stoll(e[i + 1].str) == static_cast<long long>(i / 2 + 1));
        }
        CHECK(seen.size() == static_cast<std::size_t>(n + 2));
        CHECK(e.front().str == "before");
        CHECK(e[e.size() - 2].str == "late");
        // Shuffled: the join order is not kept (2500 users in order by chance: never).
        int in_order = 0;
        for (std::size_t i = 2; i + 2 < e.size() - 2; i += 2)
          in_order += std::stoi(e[i].str.substr(1)) < std::stoi(e[i + 2].str.substr(1));
        CHECK(in_order < n * 3 / 4);
        CO_LET(auto st, api.settings(change(settings_op::get)));
        CHECK(st.value().settings.state == queue_settings::state_kind::open);
        CHECK(st.value().prequeue_length == 0);
        CO_LET(auto draw_left, fx.conn->exec(cmd({"EXISTS", "t:{q:q}:prequeue:draw"})));
        CHECK(draw_left.value.integer == 0);
        // A join now goes to the tail.
        CO_LET(auto tail, api.join("q", "after"));
        CHECK(tail.value().position == n + 3);

        // The moves were told as queue events "q SEQ m POSITION TICKET USER...".
        co_await pushonce::test::co_wait_until(
            [&] {
              int m = 0;
              for (auto& p : wakes.payloads(fx.k.wake_channel()))
                m += p.find(" m ") != std::string::npos;
              return m >= 4;
            },
            5s);
        std::vector<std::string> moves;
        for (auto& p : wakes.payloads(fx.k.wake_channel()))
          if (p.find(" m ") != std::string::npos) moves.push_back(p);
        REQUIRE(moves.size() == 4);
        CHECK(moves[0].rfind(" m 2 2 ") != std::string::npos);
        CHECK(moves[3].find(" m 2502 2502 late") != std::string::npos);
      },
      120s);
}

TEST_CASE("opening: unshuffled, in join order; a close in the pre-queue keeps it for open") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{"q"};
    CO_DO(api.register_queues(queues));
    auto open = change(settings_op::open);
    open.opens_at = wall_ms() + 3'600'000;
    CO_DO(api.settings(open));
    for (auto& u : users_named("u", 5)) CO_DO(api.join("q", u));
    CO_DO(api.settings(change(settings_op::close)));
    CO_LET(auto refused, api.join("q", "x"));
    CHECK(refused.error().code == pushonce::errc_closed);
    // Open without a time: the pre-queue left opens now, in join order.
    CO_LET(auto s, api.settings(change(settings_op::open)));
    CHECK(s.value().settings.state == queue_settings::state_kind::prequeue);
    CO_LET(auto m,
           pushonce::lua::run_script(*fx.conn, pushonce::lua::opening_move_for(fx.k, "q", 1, 3)));
    CHECK(pushonce::lua::parse_opening_move_reply(m.value)->moved == 3);
    CO_LET(auto m2,
           pushonce::lua::run_script(*fx.conn, pushonce::lua::opening_move_for(fx.k, "q", 1, 3)));
    CHECK(pushonce::lua::parse_opening_move_reply(m2.value)->left == 0);
    std::vector<std::string> want = users_named("u", 5);
    CO_LET(auto list, api.list("q", 10));
    CHECK(list.value().users == want);
  });
}

}  // namespace test_waiting_room_controls_integration
