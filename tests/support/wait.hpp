#pragma once
// The one way tests wait. For a condition: wait_until (true/false, for REQUIRE and CHECK) or
// wait_for (throws a message naming what was awaited); tests/support/co_wait.hpp has their
// coroutine forms. For time itself, only when the check is that nothing happens meanwhile
// (no second delivery, no expiry), when a short duration the test set (a 30 ms lease) must
// end and its end cannot be seen without changing what is tested, or when a load is paced:
// observe_quiet, let_lapse and pace, which say why. A predicate's exceptions are never swallowed;
// one polled while Redis restarts says so itself with unless_redis_down.

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pushonce::test {

/// The pauses between polls: `first` (1 ms), doubling up to `cap`, so that a condition that
/// holds soon is seen soon and one that takes long costs one poll per `cap`. Never past the
/// deadline: the last poll is at it.
class poll_backoff {
 public:
  poll_backoff(std::chrono::milliseconds timeout, std::chrono::milliseconds cap,
               std::chrono::milliseconds first = std::chrono::milliseconds(1));
  /// The pause before the next poll (zero once the deadline has passed).
  std::chrono::steady_clock::duration next();
  bool expired() const { return std::chrono::steady_clock::now() >= deadline_; }

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds cap_;
  std::chrono::milliseconds pause_;
};

/// Polls `pred` (backing off from `first` up to `every`) until it holds or `timeout` passes;
/// true when it held. A predicate that acts under a rate limit (sends a join, a ping) gives
/// `first` = `every`: a steady pace. An exception from `pred` propagates.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds every = std::chrono::milliseconds(20),
                std::chrono::milliseconds first = std::chrono::milliseconds(1));

/// What wait_for throws: "timed out after <timeout> ms waiting for <what>".
class wait_timeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  wait_timeout(std::chrono::milliseconds timeout, std::string_view what);
};

/// As wait_until, but a timeout throws wait_timeout naming `what`.
void wait_for(std::string_view what, const std::function<bool()>& pred,
              std::chrono::milliseconds timeout,
              std::chrono::milliseconds every = std::chrono::milliseconds(20),
              std::chrono::milliseconds first = std::chrono::milliseconds(1));

/// Lets `d` pass, for a check that something does NOT happen within it; `why` names what
/// would have happened (e.g. "a second delivery after the next sweep").
void observe_quiet(std::chrono::milliseconds d, std::string_view why);

/// Lets `d` pass for a duration kept by another clock to end (a lease or a window Redis
/// measures, a token's whole-second expiry), when its end cannot be seen without changing
/// what is tested; `what` names it (e.g. "w1's 30 ms lease"). Keep such durations short.
void let_lapse(std::chrono::milliseconds d, std::string_view what);

/// Lets `d` pass between two steps of a load or a retry, which go at a pace rather than
/// wait for something; `why` names the pace (e.g. "~25 publishes a second").
void pace(std::chrono::milliseconds d, std::string_view why);

/// `pred`, except that a Redis that cannot be reached (sync_redis throws redis_unreachable:
/// it is being restarted or failed over) counts as "not yet". Any other exception propagates.
std::function<bool()> unless_redis_down(std::function<bool()> pred);

}  // namespace pushonce::test
