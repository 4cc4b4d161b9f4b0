#include "gateway/refresh_schedule.hpp"

namespace pushonce::gateway {

bool refresh_schedule::changed(const std::string& queue) {
  dirty_.insert(queue);
  if (timer_armed_) return false;
  timer_armed_ = true;
  return true;
}

std::vector<std::string> refresh_schedule::timer_fired() {
  timer_armed_ = false;
  std::vector<std::string> start;
  for (auto& q : dirty_) {
    if (refreshing_.count(q)) {
      again_.insert(q);
      continue;
    }
    refreshing_.insert(q);
    start.push_back(q);
  }
  dirty_.clear();
  return start;
}

bool refresh_schedule::refresh_done(const std::string& queue) {
  refreshing_.erase(queue);
  return again_.erase(queue) != 0;
}

}  // namespace pushonce::gateway
