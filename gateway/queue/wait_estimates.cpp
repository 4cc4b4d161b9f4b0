#include "gateway/queue/wait_estimates.hpp"

#include <utility>

#include "core/log.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

wait_estimates::wait_estimates(std::shared_ptr<redis::connection> conn, keys k,
                               clock::duration max_age)
    : conn_(std::move(conn)), keys_(std::move(k)), max_age_(max_age) {}

asio::awaitable<void> wait_estimates::refresh(std::string queue) {
  {
    std::lock_guard lock(mutex_);
    auto& h = queues_[queue];
    if (h.reading || (h.read_at && clock::now() - *h.read_at < max_age_)) co_return;
    h.reading = true;
  }
  ++reads_;
  std::string q = queue;
  auto call = read_queue_pace(conn_, keys_, std::move(q));  // named: GCC 12 and co_await
  auto r = co_await std::move(call);
  std::lock_guard lock(mutex_);
  auto& h = queues_[queue];
  h.reading = false;
  h.read_at = clock::now();  // a failed read is not retried sooner either
  if (r) {
    h.pace = std::move(r.value());
  } else {
    log::debug("wait estimate of queue {}: read failed: {} {}", queue, r.error().code,
               r.error().message);
  }
}

bool wait_estimates::fresh(const std::string& queue) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(queue);
  return it != queues_.end() && it->second.read_at && clock::now() - *it->second.read_at < max_age_;
}

std::optional<long long> wait_estimates::eta_s(const std::string& queue, long long position) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(queue);
  if (it == queues_.end() || !it->second.pace) return std::nullopt;
  return it->second.pace->eta_s(position, pace_now_ms());
}

double wait_estimates::per_minute(const std::string& queue) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(queue);
  if (it == queues_.end() || !it->second.pace) return 0;
  return it->second.pace->per_minute(pace_now_ms());
}

}  // namespace pushonce::gateway
