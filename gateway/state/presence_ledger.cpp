#include "gateway/state/presence_ledger.hpp"

#include <algorithm>

namespace pushonce::gateway {

void presence_ledger::opened(const std::string& user) {
  std::lock_guard lock(mutex_);
  ++sessions_[user];
}

void presence_ledger::closed(const std::string& user) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(user);
  if (it == sessions_.end()) return;
  if (--it->second == 0) sessions_.erase(it);
}

std::vector<std::pair<std::string, std::size_t>> presence_ledger::counted() const {
  std::lock_guard lock(mutex_);
  return {sessions_.begin(), sessions_.end()};
}

std::size_t presence_ledger::users() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::chrono::milliseconds presence_retry_delay(int failures) {
  if (failures < 1) failures = 1;
  const int doublings = std::min(failures - 1, 6);
  return std::min(std::chrono::milliseconds(100) * (1 << doublings),
                  std::chrono::milliseconds(5000));
}

}  // namespace pushonce::gateway
