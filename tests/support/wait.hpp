#pragma once
// The one way tests wait. For a condition: wait_until (true/false, for REQUIRE and CHECK) or
// wait_for (throws a message naming what was awaited). For time itself, only when the check
// is that nothing happens meanwhile (no second delivery, no expiry): observe_quiet, which
// says why. A predicate's exceptions are never swallowed; one polled while Redis restarts
// says so itself with unless_redis_down.

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pushonce::test {

/// Polls `pred` every `every` until it holds or `timeout` passes; true when it held.
/// An exception from `pred` propagates.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds every = std::chrono::milliseconds(20));

/// What wait_for throws: "timed out after <timeout> ms waiting for <what>".
class wait_timeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// As wait_until, but a timeout throws wait_timeout naming `what`.
void wait_for(std::string_view what, const std::function<bool()>& pred,
              std::chrono::milliseconds timeout,
              std::chrono::milliseconds every = std::chrono::milliseconds(20));

/// Lets `d` pass, for a check that something does NOT happen within it; `why` names what
/// would have happened (e.g. "a second delivery after the next sweep").
void observe_quiet(std::chrono::milliseconds d, std::string_view why);

/// `pred`, except that a Redis that cannot be reached (sync_redis throws redis_unreachable:
/// it is being restarted or failed over) counts as "not yet". Any other exception propagates.
std::function<bool()> unless_redis_down(std::function<bool()> pred);

}  // namespace pushonce::test
