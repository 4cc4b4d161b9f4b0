#pragma once
// Exponential backoff with full jitter ("AWS architecture blog" shape): the n-th delay is
// uniform in [0, min(max, initial * 2^n)], never below `floor`. Plain logic, no timers.

#include <chrono>
#include <cstdint>
#include <random>

namespace pushonce {

class backoff {
 public:
  using ms = std::chrono::milliseconds;
  backoff(ms initial, ms max, ms floor = ms{10}, std::uint64_t seed = std::random_device{}())
      : initial_(initial), max_(max), floor_(floor), rng_(seed) {}

  /// The next delay; grows the ceiling for the one after.
  ms next() {
    auto ceiling = ceiling_now();
    if (attempt_ < 32) ++attempt_;
    std::uniform_int_distribution<std::int64_t> pick(0, ceiling.count());
    auto d = ms{pick(rng_)};
    return d < floor_ ? floor_ : d;
  }
  /// The upper bound of the next delay.
  ms ceiling_now() const {
    auto c = initial_.count() << std::min<unsigned>(attempt_, 20);
    return ms{std::min<std::int64_t>(c, max_.count())};
  }
  void reset() { attempt_ = 0; }
  unsigned attempts() const { return attempt_; }

 private:
  ms initial_, max_, floor_;
  unsigned attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace pushonce
