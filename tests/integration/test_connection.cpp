// The Redis client itself against a real redis-server: pipelining, error replies,
// timeouts, reconnects, Pub/Sub resubscription, NOSCRIPT recovery.
#include "core/redis/connection.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "core/redis/error.hpp"
#include "core/redis/scripts.hpp"
#include "core/redis/subscriber.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_connection_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::redis::reply;
using pushonce::redis::result;
using pushonce::test::cmd;
using pushonce::test::co_observe_quiet;
using pushonce::test::co_wait_for;
using pushonce::test::co_wait_until;
using pushonce::test::received;
using pushonce::test::redis_fixture;
using clock_type = std::chrono::steady_clock;

namespace {

long long ms_since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

}  // namespace

TEST_CASE("connection: 10000 INCR in one exec_all pipeline, replies in order") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<pushonce::redis::command> cmds;
    for (int i = 0; i < 10000; ++i) cmds.push_back(cmd({"INCR", "counter"}));
    CO_LET(auto rs, fx.conn->exec_all(std::move(cmds)));
    REQUIRE(rs.size() == 10000);
    int in_order = 0;
    for (std::size_t i = 0; i < rs.size(); ++i)
      in_order += rs[i].ok() && rs[i].value.kind == reply::type::integer &&
                  rs[i].value.integer == static_cast<long long>(i + 1);
    CHECK(in_order == 10000);
    auto get = cmd({"GET", "counter"});
    CO_LET(auto v, fx.conn->exec(std::move(get)));
    REQUIRE(v.ok());
    CHECK(v.value.kind == reply::type::string);
    CHECK(v.value.str == "10000");
  });
}

TEST_CASE("connection: 10000 concurrent exec coroutines on one connection") {
  redis_fixture fx;
  std::vector<long long> seen;
  int failed = 0;
  fx.run([&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; i < 10000; ++i) {
      asio::co_spawn(
          ex,
          [&, conn = fx.conn]() -> asio::awaitable<void> {
            auto c = cmd({"INCR", "counter"});
            CO_LET(auto r, conn->exec(std::move(c)));
            if (r.ok() && r.value.kind == reply::type::integer)
              seen.push_back(r.value.integer);
            else
              ++failed;
          },
          asio::detached);
    }
    CO_LET(bool all, co_wait_until([&] { return seen.size() + failed == 10000; }, 20s));
    CHECK(all);
    auto get = cmd({"GET", "counter"});
    CO_LET(auto v, fx.conn->exec(std::move(get)));
    REQUIRE(v.ok());
    CHECK(v.value.str == "10000");
  });
  CHECK(failed == 0);
  REQUIRE(seen.size() == 10000);
  std::sort(seen.begin(), seen.end());
  CHECK(seen.front() == 1);
  CHECK(seen.back() == 10000);
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());  // every value once
}

TEST_CASE("connection: an error reply is a reply, and the pipeline goes on") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<pushonce::redis::command> cmds{
        cmd({"SET", "s", "1"}), cmd({"LPUSH", "s", "x"}),  // WRONGTYPE
        cmd({"NOSUCHCOMMAND", "a"}), cmd({"INCR", "s"}), cmd({"GET", "s"})};
    CO_LET(auto rs, fx.conn->exec_all(std::move(cmds)));
    REQUIRE(rs.size() == 5);
    CHECK(rs[0].ok());
    CHECK(rs[0].value.kind == reply::type::status);
    CHECK(rs[0].value.str == "OK");
    CHECK_FALSE(rs[1].ec);
    CHECK_FALSE(rs[1].ok());
    CHECK(rs[1].value.kind == reply::type::error);
    CHECK(rs[1].value.error_code() == "WRONGTYPE");
    CHECK_FALSE(rs[2].ec);
    CHECK(rs[2].value.kind == reply::type::error);
    CHECK(rs[2].value.error_code() == "ERR");
    CHECK(rs[3].ok());
    CHECK(rs[3].value.integer == 2);
    CHECK(rs[4].value.str == "2");

    // A single exec answered with an error, then the connection keeps working.
    auto bad = cmd({"HGET", "s", "f"});
    CO_LET(auto e, fx.conn->exec(std::move(bad)));
    CHECK_FALSE(e.ec);
    CHECK(e.value.is_error());
    CHECK(e.value.error_code() == "WRONGTYPE");
    auto ping = cmd({"PING"});
    CO_LET(auto p, fx.conn->exec(std::move(ping)));
    CHECK(p.ok());
    CHECK(p.value.str == "PONG");
    CHECK(fx.conn->connected());
  });
}

TEST_CASE("connection: command timeout while the server is paused, then recovery") {
  redis_fixture fx;
  auto o = fx.options();
  o.command_timeout = 300ms;
  auto conn = fx.connect(o);
  fx.run([&]() -> asio::awaitable<void> {
    auto set = cmd({"SET", "k", "before"});
    CO_LET(auto r, conn->exec(std::move(set)));
    CHECK(r.ok());
  });

  fx.server.pause();
  long long waited = 0;
  result paused;
  fx.run([&]() -> asio::awaitable<void> {
    auto t0 = clock_type::now();
    auto get = cmd({"GET", "k"});
    CO_LET(paused, conn->exec(std::move(get)));
    waited = ms_since(t0);
  });
  fx.server.resume();

  CHECK(paused.ec == pushonce::redis::error::timeout);
  CHECK(waited >= 280);
  CHECK(waited < 1000);

  fx.run([&]() -> asio::awaitable<void> {
    // The client dropped the silent connection; it reconnects with backoff.
    result r;
    CO_DO(co_wait_for(
        "a GET answered after the reconnect",
        [&]() -> asio::awaitable<bool> {
          CO_LET(r, conn->exec(cmd({"GET", "k"})));
          co_return r.ok();
        },
        5s, 50ms));
    CHECK(r.value.str == "before");
    auto set = cmd({"SET", "k", "after"});
    auto get = cmd({"GET", "k"});
    CO_LET(auto s, conn->exec(std::move(set)));
    CO_LET(auto g, conn->exec(std::move(get)));
    CHECK(s.ok());
    CHECK(g.value.str == "after");
  });
}

TEST_CASE("connection: reconnects after a server restart and calls on_connect again") {
  redis_fixture fx;
  int connects = 0;
  auto conn = fx.connect();
  conn->on_connect([&] { ++connects; });
  // on_connect is set (posted to the strand) before the connect attempt that start()
  // posted has completed, so the first connect already counts.
  fx.run([&]() -> asio::awaitable<void> {
    auto set = cmd({"SET", "k", "v1"});
    CO_LET(auto r, conn->exec(std::move(set)));
    CHECK(r.ok());
  });
  CHECK(connects == 1);

  fx.server.restart();  // no AOF: the data is gone, the port is the same

  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(bool again, co_wait_until([&] { return connects == 2; }, 5s));
    CHECK(again);
    auto get = cmd({"GET", "k"});
    CO_LET(auto g, conn->exec(std::move(get)));
    REQUIRE(g.ok());
    CHECK(g.value.is_nil());
    std::vector<pushonce::redis::command> cmds;
    for (int i = 0; i < 100; ++i) cmds.push_back(cmd({"INCR", "n"}));
    CO_LET(auto rs, conn->exec_all(std::move(cmds)));
    REQUIRE(rs.size() == 100);
    CHECK(rs.back().ok());
    CHECK(rs.back().value.integer == 100);
  });
  CHECK(connects == 2);
  CHECK(conn->connected());
}

TEST_CASE("connection: a command issued right after a restart succeeds or fails cleanly") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    auto ping = cmd({"PING"});
    CO_LET(auto r, fx.conn->exec(std::move(ping)));
    CHECK(r.ok());
  });
  fx.server.restart();
  fx.run([&]() -> asio::awaitable<void> {
    // The first command may have been written to the dead socket: it then fails with a
    // transport error (never a wrong reply). Everything after the reconnect succeeds.
    auto first = cmd({"INCR", "x"});
    CO_LET(auto r, fx.conn->exec(std::move(first)));
    if (!r.ok()) {
      CHECK(r.ec == pushonce::redis::error::disconnected);
    } else {
      CHECK(r.value.integer == 1);
    }
    long long expect = r.ok() ? 2 : 1;
    result next;
    CO_DO(co_wait_for(
        "an INCR answered after the reconnect",
        [&]() -> asio::awaitable<bool> {
          CO_LET(next, fx.conn->exec(cmd({"INCR", "x"})));
          co_return next.ok();
        },
        5s, 50ms));
    CHECK(next.value.integer == expect);
  });
}

TEST_CASE("subscriber: confirmation, delivery in order, resubscription after a restart") {
  redis_fixture fx;
  received rec;
  auto sub = fx.subscriber(rec);
  const std::string ch = "t:chan";
  fx.run([&]() -> asio::awaitable<void> {
    std::string name = ch;
    CO_LET(auto ec, sub->subscribe(std::move(name)));
    CHECK_FALSE(ec);
    CHECK(sub->connected());
    // The waiter is completed inline, before on_connect runs for the same confirmation.
    CO_LET(bool connected_once, co_wait_until([&] { return rec.connects == 1; }, 1s));
    CHECK(connected_once);

    // Confirmed means subscribed: a PUBLISH right now reaches exactly one subscriber.
    std::vector<pushonce::redis::command> pubs;
    for (int i = 0; i < 100; ++i) pubs.push_back(cmd({"PUBLISH", ch, "m" + std::to_string(i)}));
    CO_LET(auto rs, fx.conn->exec_all(std::move(pubs)));
    int reached = 0;
    for (auto& r : rs) reached += r.ok() && r.value.integer == 1;
    CHECK(reached == 100);
    CO_LET(bool got, co_wait_until([&] { return rec.count(ch) == 100; }, 3s));
    CHECK(got);
    auto p = rec.payloads(ch);
    int in_order = 0;
    for (std::size_t i = 0; i < p.size(); ++i) in_order += p[i] == "m" + std::to_string(i);
    CHECK(in_order == 100);

    // A channel nobody subscribed to is not delivered.
    auto other = cmd({"PUBLISH", "t:other", "x"});
    CO_LET(auto o, fx.conn->exec(std::move(other)));
    CHECK(o.value.integer == 0);
  });

  fx.server.restart();

  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(bool again, co_wait_until([&] { return rec.connects == 2; }, 5s));
    REQUIRE(again);  // on_connect runs once every channel is subscribed again
    auto pub = cmd({"PUBLISH", ch, "after-restart"});
    result r;
    CO_DO(co_wait_for(
        "the publisher reconnected too",
        [&]() -> asio::awaitable<bool> {
          auto p = pub;
          CO_LET(r, fx.conn->exec(std::move(p)));
          co_return r.ok();
        },
        5s, 50ms));
    CHECK(r.value.integer == 1);
    CO_LET(bool got, co_wait_until([&] { return rec.count(ch) == 101; }, 3s));
    CHECK(got);
    CHECK(rec.messages.back().first == ch);
    CHECK(rec.messages.back().second == "after-restart");
  });
  CHECK(rec.count("t:other") == 0);
  CHECK(rec.messages.size() == 101);
}

TEST_CASE("scripts: eval recovers from NOSCRIPT after SCRIPT FLUSH and after a restart") {
  redis_fixture fx;
  const auto& s = pushonce::redis::get_script("source");
  CHECK(s.sha1.size() == 40);
  CHECK_THROWS_AS(pushonce::redis::get_script("no_such_script"), std::out_of_range);
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> keys{"t:sources"};
    std::vector<std::string> args{"q:a"};
    CO_LET(auto r1, pushonce::redis::eval(*fx.conn, s, keys, args));
    REQUIRE(r1.ok());
    CHECK(r1.value.integer == 16);
    auto exists = cmd({"SCRIPT", "EXISTS", s.sha1});
    CO_LET(auto e1, fx.conn->exec(exists));
    CHECK(e1.value.at(0).integer == 1);

    auto flush = cmd({"SCRIPT", "FLUSH"});
    CO_LET(auto f, fx.conn->exec(std::move(flush)));
    CHECK(f.ok());
    CO_LET(auto e2, fx.conn->exec(exists));
    CHECK(e2.value.at(0).integer == 0);

    std::vector<std::string> args_b{"q:b"};
    CO_LET(auto r2, pushonce::redis::eval(*fx.conn, s, keys, args_b));
    REQUIRE(r2.ok());
    CHECK(r2.value.integer == 17);
    CO_LET(auto e3, fx.conn->exec(exists));
    CHECK(e3.value.at(0).integer == 1);
    // Same name again: the stored index, no new one.
    CO_LET(auto r3, pushonce::redis::eval(*fx.conn, s, keys, args));
    CHECK(r3.value.integer == 16);
  });

  fx.server.restart();  // scripts and data gone

  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> keys{"t:sources"};
    std::vector<std::string> args{"q:c"};
    pushonce::redis::result r;
    CO_DO(co_wait_for(
        "the script run after the restart",
        [&]() -> asio::awaitable<bool> {
          CO_LET(r, pushonce::redis::eval(*fx.conn, s, keys, args));
          co_return !r.ec;
        },
        5s, 50ms));
    REQUIRE(r.ok());
    CHECK(r.value.integer == 16);
  });
}

TEST_CASE("connection: commands issued while the server is down wait for the reconnect") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    auto ping = cmd({"PING"});
    CO_LET(auto r, fx.conn->exec(std::move(ping)));
    CHECK(r.ok());
  });
  fx.server.stop();
  std::vector<result> results;
  fx.run([&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    // Let the client notice the closed connection first, so the commands are queued
    // while it is disconnected rather than written to the dead socket.
    CO_LET(bool down, co_wait_until([&] { return !fx.conn->connected(); }, 2s));
    CHECK(down);
    for (int i = 0; i < 3; ++i) {
      asio::co_spawn(
          ex,
          [&]() -> asio::awaitable<void> {
            auto incr = cmd({"INCR", "queued"});
            CO_LET(auto r, fx.conn->exec(std::move(incr)));
            results.push_back(std::move(r));
          },
          asio::detached);
    }
    CO_DO(co_observe_quiet(300ms, "a queued command answered while reconnects fail"));
    CHECK(results.empty());
  });
  fx.server.restart();
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(bool all, co_wait_until([&] { return results.size() == 3; }, 4s));
    CHECK(all);
  });
  REQUIRE(results.size() == 3);
  std::vector<long long> values;
  for (auto& r : results) {
    CHECK(r.ok());
    values.push_back(r.value.integer);
  }
  CHECK(values == std::vector<long long>{1, 2, 3});
}

TEST_CASE("connection: without a server, a command fails with timeout after command_timeout") {
  redis_fixture fx;
  auto o = fx.options();
  o.where.port = pushonce::test::free_port();  // nobody listens there
  o.command_timeout = 200ms;
  auto conn = fx.connect(o);
  long long waited = 0;
  result r;
  fx.run([&]() -> asio::awaitable<void> {
    auto t0 = clock_type::now();
    auto ping = cmd({"PING"});
    CO_LET(r, conn->exec(std::move(ping)));
    waited = ms_since(t0);
  });
  CHECK(r.ec == pushonce::redis::error::timeout);
  CHECK(waited >= 190);
  CHECK(waited < 800);
  CHECK_FALSE(conn->connected());
}

TEST_CASE("connection: max_queued bounds the commands in flight; stop fails the rest") {
  redis_fixture fx;
  auto o = fx.options();
  o.max_queued = 10;
  auto conn = fx.connect(o);
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<pushonce::redis::command> cmds;
    for (int i = 0; i < 25; ++i) cmds.push_back(cmd({"INCR", "bounded"}));
    CO_LET(auto rs, conn->exec_all(std::move(cmds)));
    REQUIRE(rs.size() == 25);
    int ok = 0, full = 0;
    for (auto& r : rs) {
      ok += r.ok();
      full += r.ec == pushonce::redis::error::queue_full;
    }
    CHECK(ok == 10);
    CHECK(full == 15);
    auto get = cmd({"GET", "bounded"});
    CO_LET(auto g, conn->exec(std::move(get)));
    CHECK(g.value.str == "10");

    conn->stop();
    auto after = cmd({"PING"});
    CO_LET(auto s, conn->exec(std::move(after)));
    CHECK(s.ec == pushonce::redis::error::stopped);
  });
}

TEST_CASE("connection: stop() while reconnecting fails the queued commands at once") {
  redis_fixture fx;
  auto o = fx.options();
  o.where.port = pushonce::test::free_port();  // nobody listens there: connect is refused
  o.backoff_initial = 1000ms;
  o.backoff_max = 1000ms;
  auto conn = fx.connect(o);
  result r;
  bool done = false;
  long long waited = -1;
  fx.run([&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(
        ex,
        [&]() -> asio::awaitable<void> {
          auto ping = cmd({"PING"});
          CO_LET(r, conn->exec(std::move(ping)));
          done = true;
        },
        asio::detached);
    // The first connect was refused; now in its 1 s backoff.
    CO_DO(co_observe_quiet(100ms, "the PING answered before the stop"));
    CHECK_FALSE(done);
    auto t0 = clock_type::now();
    conn->stop();
    CO_LET(bool finished, co_wait_until([&] { return done; }, 3s));
    CHECK(finished);
    waited = ms_since(t0);
  });
  CHECK(r.ec == pushonce::redis::error::stopped);
  CHECK(waited < 200);
}

TEST_CASE("subscriber: stop() while reconnecting fails a pending subscribe at once") {
  redis_fixture fx;
  received rec;
  auto o = fx.options();
  o.where.port = pushonce::test::free_port();
  o.backoff_initial = 1000ms;
  o.backoff_max = 1000ms;
  auto sub = fx.subscriber(rec, o);
  std::error_code ec;
  bool done = false;
  long long waited = -1;
  fx.run([&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(
        ex,
        [&]() -> asio::awaitable<void> {
          std::string ch = "t:never";
          CO_LET(ec, sub->subscribe(std::move(ch)));
          done = true;
        },
        asio::detached);
    CO_DO(co_observe_quiet(100ms, "the subscribe confirmed before the stop"));
    CHECK_FALSE(done);
    auto t0 = clock_type::now();
    sub->stop();
    CO_LET(bool finished, co_wait_until([&] { return done; }, 3s));
    CHECK(finished);
    waited = ms_since(t0);
  });
  CHECK(ec == pushonce::redis::error::stopped);
  CHECK(waited < 200);
  CHECK(rec.connects == 0);
}

}  // namespace test_connection_integration
