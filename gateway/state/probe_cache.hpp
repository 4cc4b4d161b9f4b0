#pragma once
// The last answer of a Redis probe (/healthz's PING, /metrics's HGETALL of the counters),
// reused for `ttl` so that a flood of requests runs at most one Redis command per ttl
// (docs/security.md). While one refresh is out, other requests take the last answer
// rather than starting their own; before the first answer they wait for none and refresh
// too (a cold start, at most once per concurrent request). No sockets; thread-safe.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

namespace pushonce::gateway {

template <class T>
class probe_cache {
 public:
  using clock = std::chrono::steady_clock;

  explicit probe_cache(std::chrono::milliseconds ttl = std::chrono::seconds(1)) : ttl_(ttl) {}

  /// The cached answer when it is fresh, or when a refresh is already out; std::nullopt
  /// means "refresh now, then store()".
  std::optional<T> lookup(clock::time_point now = clock::now()) {
    std::lock_guard lock(mutex_);
    if (value_ && (now - stored_ < ttl_ || refreshing_)) return value_;
    refreshing_ = true;
    return std::nullopt;
  }

  void store(T v, clock::time_point now = clock::now()) {
    std::lock_guard lock(mutex_);
    value_ = std::move(v);
    stored_ = now;
    refreshing_ = false;
  }

 private:
  std::chrono::milliseconds ttl_;
  std::mutex mutex_;
  std::optional<T> value_;
  clock::time_point stored_{};
  bool refreshing_ = false;
};

/// What /readyz's Redis probe (SET NS:ready:<gateway id> 1 PX 5000) found; cached for a
/// second (gateway_state::ready_cache) so that a flood of /readyz runs one write a second.
struct redis_write_probe {
  bool answered = false;  // no transport error within the deadline
  bool writable = false;  // and no error reply
  std::string error;      // the transport error or the error reply
  // Redis Cluster only: the slots no master serves (redis::slots_without_master, "" for
  // none); std::nullopt on a single Redis or when CLUSTER NODES did not answer.
  std::optional<std::string> slots_without_master;
};

}  // namespace pushonce::gateway
