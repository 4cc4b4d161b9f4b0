#pragma once
// When position_notifier reads a queue's positions, decided without sockets or timers: a
// change marks the queue dirty and asks for the debounce timer when none is armed; when the
// timer fires, each dirty queue starts one refresh, unless one is already out for it (then it
// runs once more after that one ends). So a join/leave flood on a queue costs at most one
// refresh per debounce period and never more than one at a time, however many changes.

#include <set>
#include <string>
#include <vector>

namespace pushonce::gateway {

class refresh_schedule {
 public:
  /// A queue changed. true: arm the debounce timer now (it was not armed).
  bool changed(const std::string& queue);
  /// The debounce timer fired: the queues whose refresh starts now (each marked as out).
  std::vector<std::string> timer_fired();
  /// The refresh of `queue` ended. true: it changed meanwhile, call changed(queue) again.
  bool refresh_done(const std::string& queue);

  bool timer_armed() const { return timer_armed_; }
  bool refreshing(const std::string& queue) const { return refreshing_.count(queue) != 0; }

 private:
  bool timer_armed_ = false;
  std::set<std::string> dirty_;       // changed since the timer was armed
  std::set<std::string> refreshing_;  // a refresh is out
  std::set<std::string> again_;       // ... and the queue changed while it was
};

}  // namespace pushonce::gateway
