// Two leaders racing on one queue (assign.lua through core/queue_api on separate
// connections): no double assignment, whatever the interleaving; fencing tokens stop a
// deposed leader.
#include "core/queue_api.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/names.hpp"
#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_two_leaders_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::assignment;
using pushonce::queue_api;
using pushonce::test::async_latch;
using pushonce::test::cmd;
using pushonce::test::co_wait_until;
using pushonce::test::redis_fixture;

namespace {

std::string numbered(const char* prefix, int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%04d", prefix, i);
  return buf;
}

// Users u0000.. join in order; resources r0000.. are added in order.
asio::awaitable<void> fill(queue_api& api, std::string q, int n) {
  std::vector<std::string> queues{q};
  CO_LET(auto reg, api.register_queues(std::move(queues)));
  REQUIRE(reg.has_value());
  for (int i = 0; i < n; ++i) {
    CO_LET(auto j, api.join(q, numbered("u", i)));
    REQUIRE(j.has_value());
  }
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(numbered("r", i));
  CO_LET(auto add, api.add_resources(q, std::move(ids), ""));
  REQUIRE(add.has_value());
}

std::map<std::string, std::string> as_map(const pushonce::redis::reply& r) {
  std::map<std::string, std::string> m;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
    m[r.elements[i].str] = r.elements[i + 1].str;
  return m;
}

struct leader_log {
  std::vector<assignment> got;
  std::vector<std::string> failures;  // error codes
};

}  // namespace

TEST_CASE("two leaders: 1000 users, 1000 resources, every one assigned exactly once") {
  redis_fixture fx;
  const std::string q = "race";
  constexpr int n = 1000;
  queue_api admin(fx.conn, fx.k);
  queue_api leader_a(fx.connect(), fx.k);
  queue_api leader_b(fx.connect(), fx.k);
  leader_log a, b;
  std::map<std::string, std::string> assigned, holders;
  long long outbox_len = -1, waiting_left = -1, free_left = -1;
  fx.run([&]() -> asio::awaitable<void> {
    CO_DO(fill(admin, q, n));
    CO_LET(auto src, admin.source_index(q));
    REQUIRE(src.has_value());
    const long long source = src.value();

    auto ex = co_await asio::this_coro::executor;
    async_latch done(ex, 2);
    auto run_leader = [&](queue_api& api, leader_log& log) {
      asio::co_spawn(
          ex,
          [&]() -> asio::awaitable<void> {
            for (;;) {
              CO_LET(auto r, api.assign_one(q, source, 0, 0));
              if (!r.has_value()) {
                log.failures.emplace_back(pushonce::code_text(r.error().code));
                break;
              }
              if (!r.value()) break;  // nobody waits or nothing is free
              log.got.push_back(*r.value());
            }
            done.count_down();
          },
          asio::detached);
    };
    run_leader(leader_a, a);
    run_leader(leader_b, b);
    CO_DO(done.wait());

    auto h1 = cmd({"HGETALL", fx.k.queue(q, "assigned")});
    auto h2 = cmd({"HGETALL", fx.k.queue(q, "res:holder")});
    auto xlen = cmd({"XLEN", fx.k.queue(q, "outbox")});
    auto zw = cmd({"ZCARD", fx.k.queue(q, "waiting")});
    auto zf = cmd({"ZCARD", fx.k.queue(q, "res:free")});
    std::vector<pushonce::redis::command> cmds{h1, h2, xlen, zw, zf};
    CO_LET(auto rs, fx.conn->exec_all(std::move(cmds)));
    assigned = as_map(rs[0].value);
    holders = as_map(rs[1].value);
    outbox_len = rs[2].value.integer;
    waiting_left = rs[3].value.integer;
    free_left = rs[4].value.integer;
  });

  CHECK(a.failures.empty());
  CHECK(b.failures.empty());
  // Both really took part (they alternate on the server).
  CHECK(a.got.size() > 0);
  CHECK(b.got.size() > 0);
  MESSAGE("leader A assigned " << a.got.size() << ", leader B " << b.got.size());

  std::vector<assignment> all = a.got;
  all.insert(all.end(), b.got.begin(), b.got.end());
  CHECK(all.size() == n);
  std::set<std::string> users, resources, ids;
  for (auto& x : all) {
    users.insert(x.user);
    resources.insert(x.resource);
    ids.insert(x.id);
  }
  CHECK(users.size() == n);
  CHECK(resources.size() == n);
  CHECK(ids.size() == n);

  CHECK(assigned.size() == n);
  CHECK(holders.size() == n);
  int agree = 0;
  for (auto& x : all) agree += assigned[x.user] == x.resource && holders[x.resource] == x.user;
  CHECK(agree == n);
  CHECK(outbox_len == n);
  CHECK(waiting_left == 0);
  CHECK(free_left == 0);

  // In id order the assignments are FIFO: the i-th user got the i-th resource.
  std::sort(all.begin(), all.end(), [](const assignment& x, const assignment& y) {
    return pushonce::compare_ids(x.id, y.id) < 0;
  });
  int fifo = 0;
  for (int i = 0; i < n; ++i)
    fifo += all[i].user == numbered("u", i) && all[i].resource == numbered("r", i);
  CHECK(fifo == n);
}

TEST_CASE("two leaders with fencing tokens: the older leader is fenced") {
  redis_fixture fx;
  const std::string q = "fenced";
  queue_api admin(fx.conn, fx.k);
  queue_api leader_a(fx.connect(), fx.k);
  queue_api leader_b(fx.connect(), fx.k);
  fx.run([&]() -> asio::awaitable<void> {
    CO_DO(fill(admin, q, 5));
    CO_LET(auto src, admin.source_index(q));
    const long long source = src.value();

    CO_LET(auto a1, leader_a.assign_one(q, source, 1, 0));
    REQUIRE(a1.has_value());
    REQUIRE(a1.value());
    CHECK(a1.value()->user == "u0000");
    auto fence = cmd({"GET", fx.k.queue(q, "fence")});
    CO_LET(auto f1, fx.conn->exec(fence));
    CHECK(f1.value.str == "1");

    CO_LET(auto b1, leader_b.assign_one(q, source, 2, 0));
    REQUIRE(b1.has_value());
    REQUIRE(b1.value());
    CHECK(b1.value()->user == "u0001");
    CO_LET(auto f2, fx.conn->exec(fence));
    CHECK(f2.value.str == "2");

    CO_LET(auto a2, leader_a.assign_one(q, source, 1, 0));
    REQUIRE_FALSE(a2.has_value());
    CHECK(a2.error().code == pushonce::errc::fenced);

    // The fenced call changed nothing.
    auto zw = cmd({"ZCARD", fx.k.queue(q, "waiting")});
    auto zf = cmd({"ZCARD", fx.k.queue(q, "res:free")});
    auto xlen = cmd({"XLEN", fx.k.queue(q, "outbox")});
    std::vector<pushonce::redis::command> cmds{zw, zf, xlen, fence};
    CO_LET(auto rs, fx.conn->exec_all(cmds));
    CHECK(rs[0].value.integer == 3);
    CHECK(rs[1].value.integer == 3);
    CHECK(rs[2].value.integer == 2);
    CHECK(rs[3].value.str == "2");

    // The same token again is the same leader: accepted.
    CO_LET(auto b2, leader_b.assign_one(q, source, 2, 0));
    REQUIRE(b2.has_value());
    REQUIRE(b2.value());
    CHECK(b2.value()->user == "u0002");
    CO_LET(auto a3, leader_a.assign_one(q, source, 1, 0));
    CHECK(a3.error().code == pushonce::errc::fenced);
  });
}

TEST_CASE("two leaders with fencing tokens racing: A stops at B's first assignment") {
  redis_fixture fx;
  const std::string q = "handover";
  constexpr int n = 300;
  queue_api admin(fx.conn, fx.k);
  queue_api leader_a(fx.connect(), fx.k);
  queue_api leader_b(fx.connect(), fx.k);
  leader_log a, b;
  fx.run([&]() -> asio::awaitable<void> {
    CO_DO(fill(admin, q, n));
    CO_LET(auto src, admin.source_index(q));
    const long long source = src.value();
    auto ex = co_await asio::this_coro::executor;
    async_latch done(ex, 2);
    auto run_leader = [&](queue_api& api, leader_log& log, long long token, int start_after) {
      asio::co_spawn(
          ex,
          [&, token, start_after]() -> asio::awaitable<void> {
            CO_LET(
                bool started,
                co_wait_until([&] { return static_cast<int>(a.got.size()) >= start_after; }, 5s));
            CHECK(started);
            for (;;) {
              CO_LET(auto r, api.assign_one(q, source, token, 0));
              if (!r.has_value()) {
                log.failures.emplace_back(pushonce::code_text(r.error().code));
                break;
              }
              if (!r.value()) break;
              log.got.push_back(*r.value());
            }
            done.count_down();
          },
          asio::detached);
    };
    run_leader(leader_a, a, 1, 0);
    run_leader(leader_b, b, 2, 20);  // B takes over once A has made 20 assignments
    CO_DO(done.wait());
  });
  CHECK(a.failures == std::vector<std::string>{"fenced"});
  CHECK(b.failures.empty());
  CHECK(a.got.size() >= 20);
  CHECK(a.got.size() + b.got.size() == n);
  REQUIRE_FALSE(b.got.empty());
  // Every assignment of A precedes every assignment of B.
  CHECK(pushonce::compare_ids(a.got.back().id, b.got.front().id) < 0);
  std::set<std::string> users;
  for (auto& x : a.got) users.insert(x.user);
  for (auto& x : b.got) users.insert(x.user);
  CHECK(users.size() == n);
}

TEST_CASE("leader_lease.lua advance: only the holder moves the counter past a queue's fence") {
  redis_fixture fx;
  const std::vector<std::string> keys{fx.k.plain("leader"), fx.k.plain("leader:fencing")};
  auto args = [&](std::string mode, std::string id, std::string above = {}) {
    std::vector<std::string> a{mode, id, "1", "h", "5000", fx.k.plain("leader:released")};
    if (!above.empty()) a.push_back(above);
    return a;
  };
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto l1,
           pushonce::test::run_script(*fx.conn, "leader_lease", keys, args("acquire", "l1")));
    CHECK(l1.value.as_int() == 1);
    // Not the holder: nothing moves.
    CO_LET(auto other, pushonce::test::run_script(*fx.conn, "leader_lease", keys,
                                                  args("advance", "l2", "999999")));
    CHECK(other.value.as_int() == 0);
    // The holder: a token above the fence, the counter and the lease follow it.
    CO_LET(auto moved, pushonce::test::run_script(*fx.conn, "leader_lease", keys,
                                                  args("advance", "l1", "999999")));
    CHECK(moved.value.as_int() == 1000000);
    CO_LET(auto renewed,
           pushonce::test::run_script(*fx.conn, "leader_lease", keys, args("renew", "l1")));
    CHECK(renewed.value.as_int() == 1000000);
    auto get = cmd({"GET", fx.k.plain("leader:fencing")});
    CO_LET(auto counter, fx.conn->exec(get));
    CHECK(counter.value.str == "1000000");
    // A fence already below the counter: one more, as an acquire would.
    CO_LET(auto again,
           pushonce::test::run_script(*fx.conn, "leader_lease", keys, args("advance", "l1", "5")));
    CHECK(again.value.as_int() == 1000001);
    // Without the fence: refused, nothing written.
    CO_LET(auto bad,
           pushonce::test::run_script(*fx.conn, "leader_lease", keys, args("advance", "l1")));
    CHECK(bad.value.is_error());
    CO_LET(auto after, fx.conn->exec(get));
    CHECK(after.value.str == "1000001");
  });
}

}  // namespace test_two_leaders_integration
