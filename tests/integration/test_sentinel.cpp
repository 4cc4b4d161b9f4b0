// The Redis client behind Redis Sentinel (tests/support/redis_sentinel: one master, two
// replicas, three sentinels): a connection and a subscriber find the master through the
// sentinels, and after kill -9 of the master they follow the replica the sentinels promote.
#include "core/redis/sentinel_lookup.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/redis/connection.hpp"
#include "core/redis/sentinel_choice.hpp"
#include "core/redis/subscriber.hpp"
#include "tests/integration/redis_fixture.hpp"
#include "tests/integration/run_async.hpp"
#include "tests/support/redis_sentinel.hpp"
#include "tests/support/redis_server.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_sentinel_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::redis::connection_options;
using pushonce::redis::sentinel_config;
using pushonce::test::cmd;
using pushonce::test::co_wait_for;
using pushonce::test::co_wait_until;
using pushonce::test::received;
using pushonce::test::redis_sentinel;
using pushonce::test::run_async;
using clock_type = std::chrono::steady_clock;

namespace {

connection_options sentinel_options(const redis_sentinel& rs) {
  connection_options o;
  o.sentinel = sentinel_config::parse(rs.url());
  o.where = o.sentinel.sentinels.front();
  o.connect_timeout = 1s;
  o.command_timeout = 2s;
  return o;
}

// The tcp_port the server behind `conn` reports (INFO server), 0 when the command fails.
asio::awaitable<long long> served_by(pushonce::redis::connection& conn) {
  auto info = cmd({"INFO", "server"});
  CO_LET(auto r, conn.exec(std::move(info)));
  if (!r.ok()) co_return 0;
  auto at = r.value.str.find("tcp_port:");
  co_return at == std::string::npos ? 0 : std::atoll(r.value.str.c_str() + at + 9);
}

}  // namespace

TEST_CASE("sentinel: find_master asks the sentinels in turn and skips one that is down" *
          doctest::test_suite("sentinel")) {
  redis_sentinel rs;
  auto o = sentinel_options(rs);
  // The first sentinel listed is not there: the second one answers.
  auto dead = pushonce::test::free_port();
  o.sentinel.sentinels.front().port = dead;
  pushonce::redis::sentinel_choice choice(o.sentinel);
  asio::io_context io;
  auto found = run_async(io, [&]() -> asio::awaitable<std::optional<pushonce::redis::endpoint>> {
    std::string why;
    CO_LET(auto m, pushonce::redis::find_master(io.get_executor(), o, choice, why));
    co_return m;
  });
  REQUIRE(found);
  CHECK(found->port == rs.server(0).port());
  CHECK(choice.order().front() == 1);  // the one that answered is asked first next time
}

TEST_CASE("sentinel: a connection and a subscriber follow the master through kill -9" *
          doctest::test_suite("sentinel")) {
  redis_sentinel rs;
  asio::io_context io;
  auto o = sentinel_options(rs);
  auto conn = pushonce::redis::connection::create(io.get_executor(), o);
  conn->start();
  received got;
  auto sub = pushonce::redis::subscriber::create(
      io.get_executor(), o, [&got](const std::string& ch, std::string payload) {
        got.messages.emplace_back(ch, std::move(payload));
      });
  sub->on_connect([&got] { ++got.connects; });
  sub->start();

  auto old_master = rs.server(0).port();
  run_async(io, [&]() -> asio::awaitable<void> {
    CO_LET(auto port, served_by(*conn));
    CHECK(port == old_master);
    CO_LET(auto ec, sub->subscribe("ch"));
    REQUIRE_FALSE(ec);
    auto set = cmd({"SET", "k", "before"});
    CO_LET(auto r, conn->exec(std::move(set)));
    CHECK(r.ok());
    auto pub = cmd({"PUBLISH", "ch", "before"});
    CO_LET(auto n, conn->exec(std::move(pub)));
    CHECK(n.value.integer == 1);
    CO_LET(bool heard, co_wait_until([&] { return got.count("ch") >= 1; }, 1s));
    CHECK(heard);
    CHECK(got.count("ch") == 1);
  });

  rs.server(0).kill();
  auto killed = clock_type::now();
  long long recovered_ms = -1;
  run_async(
      io,
      [&]() -> asio::awaitable<void> {
        CO_DO(co_wait_for(
            "a SET answered after the failover",
            [&]() -> asio::awaitable<bool> {
              CO_LET(auto r, conn->exec(cmd({"SET", "k", "after"})));
              co_return r.ok();
            },
            35s, 50ms));
        recovered_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - killed)
                .count();
      },
      40s);
  auto new_master = rs.master_port();
  std::printf(
      "sentinel failover: commands succeed again %lld ms after kill -9 of the master "
      "(down-after 1000 ms); new master 127.0.0.1:%u\n",
      recovered_ms, static_cast<unsigned>(new_master));
  CHECK(recovered_ms >= 0);
  CHECK(recovered_ms < 15000);
  CHECK(new_master != old_master);

  run_async(
      io,
      [&]() -> asio::awaitable<void> {
        CO_LET(auto port, served_by(*conn));
        CHECK(port == new_master);
        // The subscriber is back on the new master: a message published there arrives.
        CO_LET(bool listening, co_wait_until(
                                   [&]() -> asio::awaitable<bool> {
                                     CO_LET(auto n, conn->exec(cmd({"PUBLISH", "ch", "after"})));
                                     co_return n.ok() && n.value.integer == 1;
                                   },
                                   10s, 50ms));
        CHECK(listening);
        CO_LET(bool heard, co_wait_until([&] { return got.count("ch") >= 2; }, 1s));
        CHECK(heard);
      },
      30s);
  CHECK(got.payloads("ch") == std::vector<std::string>{"before", "after"});
  CHECK(got.connects >= 2);
  conn->stop();
  sub->stop();
  io.restart();
  io.run_for(1s);
}

TEST_CASE("sentinel: a password on the master, none on the sentinels: asked without it" *
          doctest::test_suite("sentinel")) {
  redis_sentinel rs("main", "s3cret");
  asio::io_context io;
  auto o = sentinel_options(rs);
  REQUIRE(o.sentinel.master_name == "main");
  REQUIRE(o.sentinel.sentinels.front().password == "s3cret");
  auto conn = pushonce::redis::connection::create(io.get_executor(), o);
  conn->start();
  run_async(io, [&]() -> asio::awaitable<void> {
    CO_LET(auto port, served_by(*conn));
    CHECK(port == rs.server(0).port());
    auto set = cmd({"SET", "k", "v"});
    CO_LET(auto r, conn->exec(std::move(set)));
    CHECK(r.ok());
  });
  conn->stop();
  io.restart();
  io.run_for(1s);
}

}  // namespace test_sentinel_integration
