#pragma once
// When each publish batch is due. At a fixed rate the schedule, not the system, decides
// send times: batch k of B messages is due k*B/rate seconds after the start, whether or
// not the batches before it were answered, and a message's latency is counted from when
// it was due. A slow system then shows as latency instead of as a lower send rate (no
// coordinated omission). Rate 0 is "as fast as possible": every batch is due at once and
// latency counts from the actual send.

#include <chrono>
#include <cstdint>
#include <optional>

namespace pushonce::bench {

class rate_schedule {
 public:
  using duration = std::chrono::nanoseconds;

  /// rate: messages per second (0: as fast as possible); batch: messages per request;
  /// total: messages in the run (0: no limit, the duration decides).
  rate_schedule(double rate, std::uint64_t batch, std::uint64_t total);

  bool paced() const { return rate_ > 0; }
  std::uint64_t batch() const { return batch_; }
  /// How many batches the run has (0: no limit), and the size of batch k (the last may be
  /// smaller).
  std::uint64_t batches() const;
  std::uint64_t size_of(std::uint64_t k) const;
  /// The first message of batch k.
  std::uint64_t first_of(std::uint64_t k) const { return k * batch_; }
  /// When batch k is due, after the start (zero when not paced).
  duration due(std::uint64_t k) const;
  /// The number of batches due by `elapsed` (all of them when not paced).
  std::uint64_t due_by(duration elapsed) const;
  /// Messages in a run of this length at this rate (0 when not paced).
  static std::uint64_t messages_in(double rate, std::chrono::milliseconds length);

 private:
  double rate_;
  std::uint64_t batch_, total_;
};

}  // namespace pushonce::bench
