#pragma once
// The coroutine forms of tests/support/wait.hpp, for tests that drive their connections on
// one io_context (tests/integration/run_async.hpp): the pauses wait on the coroutine's
// executor, so the connections under test keep running meanwhile.
//
// A predicate returns bool, or awaitable<bool> when telling needs a round trip:
//   CO_LET(bool up, co_wait_until([&]() -> asio::awaitable<bool> {
//     CO_LET(auto r, conn->exec(cmd({"PING"})));
//     co_return r.ok();
//   }, 5s));

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tests/support/wait.hpp"

namespace pushonce::test {

namespace detail {

inline boost::asio::awaitable<void> co_let_pass(std::chrono::steady_clock::duration d) {
  boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
  co_await t.async_wait(boost::asio::use_awaitable);
}

template <typename Pred>
boost::asio::awaitable<bool> co_holds(Pred& pred) {
  if constexpr (std::is_same_v<std::invoke_result_t<Pred&>, boost::asio::awaitable<bool>>) {
    auto op = pred();
    co_return co_await std::move(op);
  } else {
    co_return static_cast<bool>(pred());
  }
}

}  // namespace detail

/// Polls `pred` (backing off up to `every`) until it holds or `timeout` passes; true when
/// it held. An exception from `pred` propagates.
template <typename Pred>
boost::asio::awaitable<bool> co_wait_until(
    Pred pred, std::chrono::milliseconds timeout,
    std::chrono::milliseconds every = std::chrono::milliseconds(10)) {
  poll_backoff backoff(timeout, every);
  for (;;) {
    auto check = detail::co_holds(pred);
    if (co_await std::move(check)) co_return true;
    if (backoff.expired()) co_return false;
    auto pause = detail::co_let_pass(backoff.next());
    co_await std::move(pause);
  }
}

/// As co_wait_until, but a timeout throws wait_timeout naming `what` (run_async rethrows it
/// and doctest reports it).
template <typename Pred>
boost::asio::awaitable<void> co_wait_for(
    std::string what, Pred pred, std::chrono::milliseconds timeout,
    std::chrono::milliseconds every = std::chrono::milliseconds(10)) {
  auto op = co_wait_until(std::move(pred), timeout, every);
  if (!co_await std::move(op)) throw wait_timeout(timeout, what);
}

/// Lets `d` pass on this coroutine's executor, for a check that something does NOT happen
/// within it; `why` names what would have happened.
inline boost::asio::awaitable<void> co_observe_quiet(std::chrono::milliseconds d,
                                                     std::string_view why) {
  (void)why;  // the call site reads as the reason; nothing to poll
  auto pause = detail::co_let_pass(d);
  co_await std::move(pause);
}

/// Lets `d` pass on this coroutine's executor for a duration kept by another clock to end
/// (see let_lapse); `what` names it.
inline boost::asio::awaitable<void> co_let_lapse(std::chrono::milliseconds d,
                                                 std::string_view what) {
  (void)what;  // the call site reads as the reason; nothing to poll
  auto pause = detail::co_let_pass(d);
  co_await std::move(pause);
}

}  // namespace pushonce::test
