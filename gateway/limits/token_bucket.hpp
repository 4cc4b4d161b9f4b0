#pragma once
// A token bucket (no sockets, no clock of its own): `rate` tokens per second refill it up
// to `burst`; a take of `cost` succeeds when that many tokens are there. Rate 0 means no
// limit. Used per session for client frames and for join/leave (frame_limiter).

#include <chrono>

namespace pushonce::gateway {

class token_bucket {
 public:
  using clock = std::chrono::steady_clock;

  /// Starts full.
  token_bucket(double rate_per_s, double burst, clock::time_point now = clock::now());

  /// Takes `cost` tokens when they are there; false (nothing taken) when they are not.
  bool take(clock::time_point now, double cost = 1);
  /// Tokens there at `now` (after the refill).
  double available(clock::time_point now);
  bool unlimited() const { return rate_ <= 0; }

 private:
  void refill(clock::time_point now);

  double rate_;
  double burst_;
  double tokens_;
  clock::time_point last_;
};

}  // namespace pushonce::gateway
