#pragma once
// Running coroutines from a (synchronous) doctest case.
//
// run_async(io, f): co_spawns f() on io and drives io on the calling thread until f's
// awaitable completes; returns its value (rethrows its exception). Everything — the
// coroutine, the connections' reader/writer loops, subscriber callbacks — runs on the
// test's thread, so doctest assertions may be used inside the coroutines.
// run_async(f): the same on a fresh io_context (for code that owns no long-lived I/O).
// Waits inside the coroutines: tests/support/co_wait.hpp (included).
//
// CO_LET keeps every call expression out of the co_await
// (GCC 12: docs/architecture.md "Coroutines and GCC 12"):
//   CO_LET(auto r, api.join(queue, "alice"));
// is `auto op = api.join(queue, "alice"); auto r = co_await std::move(op);`.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <future>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "tests/support/co_wait.hpp"

#define PUSHONCE_CAT2(a, b) a##b
#define PUSHONCE_CAT(a, b) PUSHONCE_CAT2(a, b)
#define CO_LET(decl, ...)                                  \
  auto PUSHONCE_CAT(co_let_op_, __LINE__) = (__VA_ARGS__); \
  decl = co_await std::move(PUSHONCE_CAT(co_let_op_, __LINE__))
#define CO_DO(...)                  \
  do {                              \
    auto co_do_op_ = (__VA_ARGS__); \
    co_await std::move(co_do_op_);  \
  } while (false)

namespace pushonce::test {

template <typename F>
auto run_async(boost::asio::io_context& io, F f,
               std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  auto fut = boost::asio::co_spawn(io, std::move(f), boost::asio::use_future);
  auto until = std::chrono::steady_clock::now() + limit;
  if (io.stopped()) io.restart();
  while (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    if (std::chrono::steady_clock::now() > until)
      throw std::runtime_error("run_async: the coroutine did not finish in time");
    io.run_one_for(std::chrono::milliseconds(50));
    if (io.stopped()) io.restart();
  }
  return fut.get();
}

template <typename F>
auto run_async(F f) {
  boost::asio::io_context io;
  return run_async(io, std::move(f));
}

/// Counts down from n; wait() completes once it reaches zero. For one io_context driven
/// by a single thread (as run_async does): every count_down and wait run on that thread.
class async_latch {
 public:
  async_latch(boost::asio::any_io_executor ex, std::size_t n)
      : timer_(std::move(ex), std::chrono::steady_clock::time_point::max()), n_(n) {}
  void count_down() {
    if (n_ > 0 && --n_ == 0) timer_.cancel();
  }
  std::size_t remaining() const { return n_; }
  boost::asio::awaitable<void> wait() {
    while (n_ > 0) {
      try {
        co_await timer_.async_wait(boost::asio::use_awaitable);
      } catch (const boost::system::system_error&) {
        // cancelled: n_ reached zero (checked again above)
      }
    }
  }

 private:
  boost::asio::steady_timer timer_;
  std::size_t n_;
};

}  // namespace pushonce::test
