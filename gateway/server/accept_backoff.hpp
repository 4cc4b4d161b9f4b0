#pragma once
// What the listener does after an accept error (no sockets here). Out of descriptors or
// memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): wait `delay` before the next accept instead of
// spinning, and warn once per episode (an episode ends with the next accepted connection),
// at most once per `warn_interval` even when episodes flap. Any other error: log it and
// accept again at once.

#include <chrono>
#include <cstdint>
#include <system_error>

namespace pushonce::gateway {

class accept_backoff {
 public:
  using clock = std::chrono::steady_clock;

  struct decision {
    std::chrono::milliseconds delay{0};  // 0: accept again at once
    bool warn = false;                   // log one warn line now
  };

  explicit accept_backoff(std::chrono::milliseconds delay = std::chrono::milliseconds(50),
                          std::chrono::seconds warn_interval = std::chrono::seconds(10))
      : delay_(delay), warn_interval_(warn_interval) {}

  static bool exhausted(const std::error_code& ec);

  decision on_error(const std::error_code& ec, clock::time_point now = clock::now());
  /// A connection was accepted: true when an episode ended (worth one info line).
  bool on_accepted();

  bool backing_off() const { return in_episode_; }
  std::uint64_t retries() const { return retries_; }

 private:
  std::chrono::milliseconds delay_;
  std::chrono::seconds warn_interval_;
  bool in_episode_ = false;
  bool warned_ = false;
  std::uint64_t retries_ = 0;  // in the current episode
  clock::time_point last_warn_{};
};

}  // namespace pushonce::gateway
