// The test fixtures themselves: redis_server and process.
#include "tests/support/redis_server.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <filesystem>
#include <memory>
#include <string>

#include "tests/support/process.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_fixture_integration {

using pushonce::test::redis_server;
using namespace std::chrono_literals;

namespace {

struct context_deleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct reply_deleter {
  void operator()(void* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

std::unique_ptr<redisContext, context_deleter> connect(std::uint16_t port) {
  timeval tv{1, 0};
  std::unique_ptr<redisContext, context_deleter> c(redisConnectWithTimeout("127.0.0.1", port, tv));
  REQUIRE(c);
  if (c->err == 0) redisSetTimeout(c.get(), tv);
  return c;
}

reply_ptr command(redisContext* c, const char* text) {
  return reply_ptr(static_cast<redisReply*>(redisCommand(c, text)));
}

}  // namespace

TEST_CASE("redis_server starts on a free port and answers PING") {
  redis_server server;
  CHECK(server.port() > 0);
  CHECK(server.url() == "redis://127.0.0.1:" + std::to_string(server.port()));
  CHECK(server.running());
  CHECK(std::filesystem::is_directory(server.dir()));

  auto c = connect(server.port());
  REQUIRE(c->err == 0);
  auto pong = command(c.get(), "PING");
  REQUIRE(pong);
  CHECK(pong->type == REDIS_REPLY_STATUS);
  CHECK(std::string(pong->str) == "PONG");
  auto save = command(c.get(), "CONFIG GET save");
  REQUIRE(save);
  REQUIRE(save->type == REDIS_REPLY_ARRAY);
  REQUIRE(save->elements == 2);
  CHECK(std::string(save->element[1]->str).empty());
}

TEST_CASE("two servers get different ports; the directory goes away with the server") {
  std::string dir;
  {
    redis_server a;
    redis_server b;
    CHECK(a.port() != b.port());
    CHECK(a.dir() != b.dir());
    dir = a.dir();
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("stop and restart keep port and directory; AOF keeps the data") {
  pushonce::test::redis_server_options options;
  options.appendonly = true;
  redis_server server(options);
  auto port = server.port();
  {
    auto c = connect(port);
    REQUIRE(c->err == 0);
    auto ok = command(c.get(), "SET k v1");
    REQUIRE(ok);
    CHECK(std::string(ok->str) == "OK");
  }
  server.stop();
  CHECK_FALSE(server.running());
  CHECK(connect(port)->err != 0);

  server.restart();
  CHECK(server.port() == port);
  CHECK(server.running());
  auto c = connect(port);
  REQUIRE(c->err == 0);
  auto v = command(c.get(), "GET k");
  REQUIRE(v);
  REQUIRE(v->type == REDIS_REPLY_STRING);
  CHECK(std::string(v->str) == "v1");
}

TEST_CASE("kill is a crash; restart brings the server back") {
  redis_server server;
  server.kill();
  CHECK_FALSE(server.running());
  server.restart();
  auto c = connect(server.port());
  REQUIRE(c->err == 0);
  auto pong = command(c.get(), "PING");
  REQUIRE(pong);
  CHECK(std::string(pong->str) == "PONG");
}

TEST_CASE("a paused server does not answer; resume brings it back") {
  redis_server server;
  server.pause();
  {
    timeval tv{0, 200 * 1000};
    auto c = connect(server.port());
    REQUIRE(c->err == 0);  // the kernel still accepts the connection
    redisSetTimeout(c.get(), tv);
    auto r = command(c.get(), "PING");
    CHECK_FALSE(r);
  }
  server.resume();
  auto c = connect(server.port());
  auto pong = command(c.get(), "PING");
  REQUIRE(pong);
  CHECK(std::string(pong->str) == "PONG");
}

TEST_CASE("process and run_capture") {
  using pushonce::test::process;
  using pushonce::test::run_capture;

  auto echo = run_capture("/bin/sh", {"-c", "echo out; echo err >&2; exit 3"});
  CHECK(echo.exit_code == 3);
  CHECK(echo.out == "out\n");
  CHECK(echo.err == "err\n");
  CHECK_FALSE(echo.timed_out);

  auto env = run_capture("/bin/sh", {"-c", "echo \"$PUSHONCE_X|${HOME-unset}\""},
                         {{"PUSHONCE_X", "42"}, {"HOME", std::nullopt}});
  CHECK(env.out == "42|unset\n");

  auto slow = run_capture("sleep", {"10"}, {}, 100ms);
  CHECK(slow.timed_out);

  CHECK_THROWS_AS(process("/no/such/program", {}), std::runtime_error);

  process sleeper("sleep", {"30"});
  CHECK(sleeper.pid() > 0);
  CHECK(sleeper.running());
  CHECK_FALSE(sleeper.wait(20ms));
  sleeper.kill(SIGTERM);
  auto status = sleeper.wait(5s);
  REQUIRE(status);
  CHECK(*status == 128 + SIGTERM);
  CHECK_FALSE(sleeper.running());
}

}  // namespace test_fixture_integration
