#include "bench/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace pushonce::bench {

std::size_t latency_histogram::bucket_of(std::uint64_t value) {
  if (value < 128) return static_cast<std::size_t>(value);
  const int msb = 63 - std::countl_zero(value);  // 7..63
  const int shift = msb - 6;
  return 128 + static_cast<std::size_t>(msb - 7) * 64 +
         static_cast<std::size_t>((value >> shift) - 64);
}

std::uint64_t latency_histogram::bucket_low(std::size_t bucket) {
  if (bucket < 128) return bucket;
  const std::size_t msb = 7 + (bucket - 128) / 64;
  const std::uint64_t sub = 64 + (bucket - 128) % 64;
  return sub << (msb - 6);
}

std::uint64_t latency_histogram::bucket_high(std::size_t bucket) {
  if (bucket < 128) return bucket;
  const std::size_t msb = 7 + (bucket - 128) / 64;
  return bucket_low(bucket) + ((std::uint64_t{1} << (msb - 6)) - 1);
}

void latency_histogram::record(std::uint64_t value) {
  ++counts_[bucket_of(value)];
  ++count_;
  sum_ += value;
  max_ = std::max(max_, value);
  min_ = std::min(min_, value);
}

void latency_histogram::merge(const latency_histogram& other) {
  for (std::size_t i = 0; i < buckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

std::uint64_t latency_histogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the value asked for, 1-based: the smallest value with at least q of the
  // values at or below it.
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const auto mid = bucket_low(i) + (bucket_high(i) - bucket_low(i)) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

}  // namespace pushonce::bench
