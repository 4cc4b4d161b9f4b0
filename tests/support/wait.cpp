#include "tests/support/wait.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/sync_redis.hpp"

namespace pushonce::test {

using clock_type = std::chrono::steady_clock;

poll_backoff::poll_backoff(std::chrono::milliseconds timeout, std::chrono::milliseconds cap,
                           std::chrono::milliseconds first)
    : deadline_(clock_type::now() + timeout),
      cap_(std::max(cap, std::chrono::milliseconds(1))),
      pause_(std::clamp(first, std::chrono::milliseconds(1), cap_)) {}

clock_type::duration poll_backoff::next() {
  auto left = deadline_ - clock_type::now();
  if (left <= clock_type::duration::zero()) return clock_type::duration::zero();
  auto pause = std::min<clock_type::duration>(pause_, left);
  pause_ = std::min(pause_ * 2, cap_);
  return pause;
}

wait_timeout::wait_timeout(std::chrono::milliseconds timeout, std::string_view what)
    : std::runtime_error("timed out after " + std::to_string(timeout.count()) + " ms waiting for " +
                         std::string(what)) {}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds every, std::chrono::milliseconds first) {
  poll_backoff backoff(timeout, every, first);
  for (;;) {
    if (pred()) return true;
    if (backoff.expired()) return false;
    std::this_thread::sleep_for(backoff.next());
  }
}

void wait_for(std::string_view what, const std::function<bool()>& pred,
              std::chrono::milliseconds timeout, std::chrono::milliseconds every,
              std::chrono::milliseconds first) {
  if (!wait_until(pred, timeout, every, first)) throw wait_timeout(timeout, what);
}

namespace {

// The ways a test lets time pass without a condition: the call site reads as the
// reason, and the reason is what a reader of the test needs; nothing to poll.
void let_pass(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);
}

}  // namespace

void observe_quiet(std::chrono::milliseconds d, std::string_view why) {
  (void)why;
  let_pass(d);
}

void let_lapse(std::chrono::milliseconds d, std::string_view what) {
  (void)what;
  let_pass(d);
}

void pace(std::chrono::milliseconds d, std::string_view why) {
  (void)why;
  let_pass(d);
}

std::function<bool()> unless_redis_down(std::function<bool()> pred) {
  return [pred = std::move(pred)] {
    try {
      return pred();
    } catch (const redis_unreachable&) {
      return false;
    }
  };
}

}  // namespace pushonce::test
