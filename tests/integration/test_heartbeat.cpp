// core/heartbeat against a real redis-server: the listing it keeps, and a run() that
// stop() ends promptly (its wait between beats is cancelled, not waited out).
#include "core/heartbeat.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <chrono>

#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_heartbeat_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::heartbeat;
using pushonce::test::cmd;
using pushonce::test::co_observe_quiet;
using pushonce::test::co_wait_for;
using pushonce::test::co_wait_until;
using pushonce::test::redis_fixture;

TEST_CASE("heartbeat: stop() ends run() at once even with a long period; remove() unlists") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    heartbeat hb(fx.conn, fx.k, "gateway", "gw-1", 10s, [] {
      return std::map<std::string, std::string>{{"sessions", "3"}};
    });
    bool done = false;
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, hb.run(), [&](std::exception_ptr) { done = true; });
    // The first beat lists the process at once.
    CO_DO(co_wait_for(
        "the first beat",
        [&]() -> asio::awaitable<bool> {
          CO_LET(auto r, fx.conn->exec(cmd({"HGET", fx.k.plain("gateway:gw-1"), "sessions"})));
          co_return r.ok() && r.value.str == "3";
        },
        2s));
    // Now waiting out its 10 s period.
    CO_DO(co_observe_quiet(50ms, "run() ending without a stop()"));
    CHECK_FALSE(done);
    auto t0 = std::chrono::steady_clock::now();
    hb.stop();
    CO_LET(bool ended, co_wait_until([&] { return done; }, 1s));
    CHECK(ended);
    CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
    CO_DO(hb.remove());
    CO_LET(auto z, fx.conn->exec(cmd({"ZSCORE", fx.k.plain("gateways"), "gw-1"})));
    CHECK(z.value.is_nil());
  });
}

TEST_CASE("heartbeat: stop() before run() makes run() beat once at most and return") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    heartbeat hb(fx.conn, fx.k, "worker", "w-1", 10s);
    hb.stop();
    auto t0 = std::chrono::steady_clock::now();
    CO_DO(hb.run());
    CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  });
}

TEST_CASE("heartbeat: a layout conflict stops the beats and is handed to the owner") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto set, fx.conn->exec(cmd({"SET", fx.k.plain("layout"), "bus-shards=16"})));
    REQUIRE(set.ok());
    pushonce::keys other(fx.k.ns(), 4);
    heartbeat hb(fx.conn, other, "worker", "w-1", 10ms);
    std::string why;
    int calls = 0;
    hb.on_conflict([&](const std::string& w) {
      why = w;
      ++calls;
    });
    CO_DO(hb.run());  // returns: the conflict stopped it
    CHECK(calls == 1);
    CHECK(why.find("bus-shards=16") != std::string::npos);
    CO_LET(auto listed, fx.conn->exec(cmd({"ZSCORE", fx.k.plain("workers"), "w-1"})));
    CHECK(!listed.value.is_nil());  // the one beat that found it
  });
}

}  // namespace test_heartbeat_integration
