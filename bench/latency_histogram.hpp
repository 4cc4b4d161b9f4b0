#pragma once
// Latencies in a fixed-size histogram with a bounded relative error: values below 128 are
// kept exactly; above, every power of two is cut into 64 equal buckets, so a reported
// percentile is within 1/128 (0.8 %) of a value really recorded. Recording is an index
// computation and an increment, cheap enough to sit on every received frame.

#include <array>
#include <cstdint>

namespace pushonce::bench {

class latency_histogram {
 public:
  /// The largest relative error of a reported value.
  static constexpr double relative_error = 1.0 / 128;

  void record(std::uint64_t value);
  void merge(const latency_histogram& other);
  void reset() { *this = latency_histogram{}; }

  std::uint64_t count() const { return count_; }
  std::uint64_t max() const { return max_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  /// The value at quantile q (0..1): the middle of the bucket holding it, never above the
  /// largest value recorded; 0 when empty.
  std::uint64_t percentile(double q) const;

  /// The bucket of a value, and the smallest and largest value of a bucket.
  static std::size_t bucket_of(std::uint64_t value);
  static std::uint64_t bucket_low(std::size_t bucket);
  static std::uint64_t bucket_high(std::size_t bucket);

 private:
  // 128 exact buckets, then 64 per power of two from 2^7 to 2^63.
  static constexpr std::size_t buckets = 128 + 57 * 64;
  std::array<std::uint64_t, buckets> counts_{};
  std::uint64_t count_ = 0, sum_ = 0, max_ = 0, min_ = UINT64_MAX;
};

}  // namespace pushonce::bench
