#pragma once
// When position_notifier pushes a queue's position frames, decided without sockets or
// timers. Positions are state: a session gets at most one position frame per `interval`,
// always the latest value. A change to a queue that was quiet is pushed after `settle`
// (so the events of one burst go out together); while the queue keeps moving, at most once
// per `interval`; the final positions go out at most one interval after the last change.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pushonce::gateway {

class position_schedule {
 public:
  using clock = std::chrono::steady_clock;

  explicit position_schedule(clock::duration interval,
                             clock::duration settle = std::chrono::milliseconds(20));

  /// `queue`'s positions changed at `now`.
  void changed(const std::string& queue, clock::time_point now);
  /// The queues to push at `now` (each marked pushed at `now`).
  std::vector<std::string> due(clock::time_point now);
  /// When the next push is due (the timer to arm), if any queue waits for one.
  std::optional<clock::time_point> next() const;
  /// The queue is no longer watched.
  void forget(const std::string& queue);

  clock::duration interval() const { return interval_; }

 private:
  struct state {
    std::optional<clock::time_point> pushed;  // the last push
    std::optional<clock::time_point> due;     // changed since: push then
  };
  clock::duration interval_, settle_;
  std::map<std::string, state> queues_;
};

}  // namespace pushonce::gateway
