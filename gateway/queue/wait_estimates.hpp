#pragma once
// The estimated waits this gateway stamps on position frames and answers (eta_s): each
// queue's pace (core/queue_pace: its assignment record and paused flag and state) is read
// at most once per `max_age` per queue, however many sessions wait in it, and shared by
// every frame rendered meanwhile. Thread-safe.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/queue_pace.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::gateway {

class wait_estimates {
 public:
  using clock = std::chrono::steady_clock;

  wait_estimates(std::shared_ptr<redis::connection> conn, keys k,
                 clock::duration max_age = std::chrono::seconds(1));

  /// Reads the queue's pace when the one held is older than max_age and no read of it is
  /// under way (otherwise returns at once: the one held stands).
  boost::asio::awaitable<void> refresh(std::string queue);
  /// True when the pace held for the queue is younger than max_age.
  bool fresh(const std::string& queue) const;
  /// eta_s at `position` from the pace held (nullopt when none is held yet).
  std::optional<long long> eta_s(const std::string& queue, long long position) const;
  /// The pace held for the queue (assignments a minute; 0 when none, paused or
  /// pre-queued): for many frames at once with wait_s_at.
  double per_minute(const std::string& queue) const;
  /// Reads made so far (one pipeline of two commands each).
  std::uint64_t reads() const { return reads_.load(); }

 private:
  struct held {
    std::optional<queue_pace> pace;
    std::optional<clock::time_point> read_at;
    bool reading = false;
  };
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  clock::duration max_age_;
  mutable std::mutex mutex_;
  std::map<std::string, held> queues_;
  std::atomic<std::uint64_t> reads_{0};
};

}  // namespace pushonce::gateway
