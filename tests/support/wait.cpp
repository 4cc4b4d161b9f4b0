#include "tests/support/wait.hpp"

#include <string>
#include <thread>
#include <utility>

#include "tests/support/sync_redis.hpp"

namespace pushonce::test {

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds every) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

void wait_for(std::string_view what, const std::function<bool()>& pred,
              std::chrono::milliseconds timeout, std::chrono::milliseconds every) {
  if (!wait_until(pred, timeout, every))
    throw wait_timeout("timed out after " + std::to_string(timeout.count()) + " ms waiting for " +
                       std::string(what));
}

void observe_quiet(std::chrono::milliseconds d, std::string_view why) {
  (void)why;  // the call site reads as the reason; nothing to poll
  std::this_thread::sleep_for(d);
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
