#include "gateway/auth/auth_failures.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace pushonce::gateway {

auth_failures::auth_failures(double burst, double per_minute, std::size_t max_tracked)
    : burst_(burst), rate_per_s_(per_minute / 60.0), max_tracked_(max_tracked) {}

std::optional<std::chrono::seconds> auth_failures::blocked(const std::string& client,
                                                           clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(client);
  if (it == buckets_.end()) return std::nullopt;
  auto left = it->second.available(now);
  if (left >= 1) return std::nullopt;
  auto wait = std::ceil((1 - left) / rate_per_s_);
  return std::chrono::seconds(std::max<long long>(1, static_cast<long long>(wait)));
}

void auth_failures::failed(const std::string& client, clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(client);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_tracked_) {
      for (auto b = buckets_.begin(); b != buckets_.end();)
        b = b->second.available(now) >= burst_ ? buckets_.erase(b) : std::next(b);
      if (buckets_.size() >= max_tracked_) buckets_.clear();
    }
    it = buckets_.emplace(client, token_bucket(rate_per_s_, burst_, now)).first;
  }
  it->second.take(now);
}

bool auth_failures::may_log(std::uint64_t& dropped, clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (last_log_ && now - *last_log_ < std::chrono::seconds(1)) {
    ++dropped_;
    return false;
  }
  last_log_ = now;
  dropped = dropped_;
  dropped_ = 0;
  return true;
}

std::size_t auth_failures::tracked() const {
  std::lock_guard lock(mutex_);
  return buckets_.size();
}

}  // namespace pushonce::gateway
