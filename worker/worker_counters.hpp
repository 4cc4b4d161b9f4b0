#pragma once
// A worker's counters (the heartbeat shows some, the final log line others) and which of
// them it adds to NS:stats, under which field: plain data, no Redis.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "worker/claim_policy.hpp"

namespace pushonce::worker {

/// The claim path's counters (won, lost, delivered, redelivered, failed, expired: heard too
/// late to deliver safely, dead_lettered) and the worker's own.
struct worker_counters : claim_tally {
  std::uint64_t received = 0, dropped = 0,
                wait_replicas_timeout = 0;  // --wait-replicas: WAITs short of N replicas
  std::uint64_t dead_letters_trimmed = 0;   // dead-letter entries dropped by the stream's trim

  /// Adds what claim_policy counted.
  worker_counters& operator+=(const claim_tally& t) {
    claim_tally::operator+=(t);
    return *this;
  }
};

/// The NS:stats fields (HINCRBY field by n) for what the counters `now` grew by since
/// `flushed` (what was last added), in a fixed order; fields that did not grow are left out.
std::vector<std::pair<std::string_view, std::uint64_t>> stats_increments(
    const worker_counters& now, const worker_counters& flushed);

/// The worker's own /metrics (--metrics-listen): every counter as
/// pushonce_worker_<name>_total{worker="ID"}, present from start (0).
std::string worker_metrics_text(std::string_view id, const worker_counters& c);

}  // namespace pushonce::worker
