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

struct worker_counters {
  std::uint64_t received = 0, won = 0, lost = 0, delivered = 0, failed = 0, dropped = 0,
                redelivered = 0, dead_lettered = 0,
                expired = 0,      // heard too late to deliver safely (claim.lua: "expired")
      wait_replicas_timeout = 0;  // --wait-replicas: WAITs short of N replicas
  std::uint64_t dead_letters_trimmed = 0;  // dead-letter entries dropped by the stream's trim

  /// Adds what claim_policy counted.
  worker_counters& operator+=(const claim_tally& t);
};

/// The NS:stats fields (HINCRBY field by n) for what the counters `now` grew by since
/// `flushed` (what was last added), in a fixed order; fields that did not grow are left out.
std::vector<std::pair<std::string_view, std::uint64_t>> stats_increments(
    const worker_counters& now, const worker_counters& flushed);

/// The worker's own /metrics (--metrics-listen): every counter as
/// pushonce_worker_<name>_total{worker="ID"}, present from start (0).
std::string worker_metrics_text(std::string_view id, const worker_counters& c);

}  // namespace pushonce::worker
