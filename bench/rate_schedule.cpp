#include "bench/rate_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pushonce::bench {

rate_schedule::rate_schedule(double rate, std::uint64_t batch, std::uint64_t total)
    : rate_(rate), batch_(std::max<std::uint64_t>(1, batch)), total_(total) {}

std::uint64_t rate_schedule::batches() const {
  return total_ == 0 ? 0 : (total_ + batch_ - 1) / batch_;
}

std::uint64_t rate_schedule::size_of(std::uint64_t k) const {
  if (total_ == 0) return batch_;
  const auto first = first_of(k);
  return first >= total_ ? 0 : std::min(batch_, total_ - first);
}

rate_schedule::duration rate_schedule::due(std::uint64_t k) const {
  if (!paced()) return duration::zero();
  return duration(
      static_cast<std::int64_t>(std::llround(static_cast<double>(k * batch_) * 1e9 / rate_)));
}

std::uint64_t rate_schedule::due_by(duration elapsed) const {
  if (!paced()) return total_ == 0 ? std::numeric_limits<std::uint64_t>::max() : batches();
  if (elapsed < duration::zero()) return 0;
  // Batch k is due when k*B/rate <= elapsed.
  auto k = static_cast<std::uint64_t>(std::floor(static_cast<double>(elapsed.count()) * rate_ /
                                                 (1e9 * static_cast<double>(batch_)))) +
           1;
  while (k > 0 && due(k - 1) > elapsed) --k;
  while (due(k) <= elapsed && (total_ == 0 || k < batches())) ++k;
  return total_ == 0 ? k : std::min(k, batches());
}

std::uint64_t rate_schedule::messages_in(double rate, std::chrono::milliseconds length) {
  if (rate <= 0) return 0;
  return static_cast<std::uint64_t>(std::llround(rate * static_cast<double>(length.count()) / 1e3));
}

}  // namespace pushonce::bench
