#pragma once
// What the threads of one run share: the clock, the counters the progress line reads, and
// per thread an io_context and the latency histogram its sessions record into.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/latency_histogram.hpp"

namespace pushonce::bench {

struct thread_slot {
  boost::asio::io_context io{1};
  std::mutex mutex;  // guards latency and connect (read by the progress line)
  latency_histogram latency, connect;
  latency_histogram accepted;  // the frame's ts (the system's clock, ms) → received
};

struct run_state {
  explicit run_state(const bench_options& opts) : o(opts) {}

  const bench_options& o;
  std::string run_id;  // in every message's data and the default user prefix
  std::string prefix;  // user names: prefix + index
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> opened{0}, given_up{0}, disconnects{0};
  std::atomic<std::uint64_t> received{0}, duplicates{0}, errors{0}, error_frames{0}, bad_frames{0};
  std::atomic<std::uint64_t> sent{0}, expected_frames{0};
  std::atomic<std::int64_t> last_frame{0};      // when the last new frame arrived (ns)
  std::vector<std::uint64_t> sessions_of_user;  // fixed before the run

  /// Nanoseconds since the run started, on the monotonic clock.
  std::int64_t now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
  }
};

}  // namespace pushonce::bench
