#include "core/exit_on_exception.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <stdexcept>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_exit_on_exception_unit {

namespace asio = boost::asio;

namespace {

asio::awaitable<void> throws() {
  throw std::runtime_error("bad number in a bus message");
  co_return;
}
asio::awaitable<int> returns() {
  co_return 7;
}

// Runs f in a child process; its exit status.
template <typename F>
int status_of_child(F f) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    f();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("exit_on_exception: an exception in a detached coroutine ends the process with 70") {
  int st = status_of_child([] {
    asio::io_context io;
    asio::co_spawn(io, throws(), pushonce::exit_on_exception("test coroutine"));
    io.run();
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == pushonce::exit_code_on_exception);
}

TEST_CASE("exit_on_exception: coroutines that end normally, with or without a value, do not") {
  int st = status_of_child([] {
    asio::io_context io;
    asio::co_spawn(io, returns(), pushonce::exit_on_exception("value coroutine"));
    asio::co_spawn(
        io, []() -> asio::awaitable<void> { co_return; },
        pushonce::exit_on_exception("void coroutine"));
    io.run();
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

}  // namespace test_exit_on_exception_unit
