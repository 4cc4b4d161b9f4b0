#include "gateway/position_schedule.hpp"

#include <algorithm>

namespace pushonce::gateway {

position_schedule::position_schedule(clock::duration interval, clock::duration settle)
    : interval_(interval), settle_(std::min(settle, interval)) {}

void position_schedule::changed(const std::string& queue, clock::time_point now) {
  auto& s = queues_[queue];
  if (s.due) return;  // already waiting for its push
  auto at = now + settle_;
  if (s.pushed) at = std::max(at, *s.pushed + interval_);
  s.due = at;
}

std::vector<std::string> position_schedule::due(clock::time_point now) {
  std::vector<std::string> out;
  for (auto& [q, s] : queues_) {
    if (!s.due || *s.due > now) continue;
    s.due.reset();
    s.pushed = now;
    out.push_back(q);
  }
  return out;
}

std::optional<position_schedule::clock::time_point> position_schedule::next() const {
  std::optional<clock::time_point> at;
  for (auto& [_, s] : queues_)
    if (s.due && (!at || *s.due < *at)) at = s.due;
  return at;
}

void position_schedule::forget(const std::string& queue) {
  queues_.erase(queue);
}

}  // namespace pushonce::gateway
