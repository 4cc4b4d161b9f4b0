#pragma once
// pushonce-worker's command line: its own options and the parse that turns them, with the
// common ones, into worker_options. Every bad value is a usage_error (exit 2 with a message).

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/metrics_listener.hpp"
#include "worker/claim_client.hpp"

namespace pushonce::worker {

struct worker_options {
  std::string id;
  std::size_t concurrency = 64;              // claim.lua calls in flight
  std::size_t max_queued = 100000;           // bus messages waiting for a slot; beyond: dropped
  std::size_t max_queued_bytes = 64u << 20;  // --max-queued-bytes: their payload bytes too
  std::size_t max_batch = 200;               // messages per claim.lua call
  bool trace = false;                        // record per-event detail for `pushonce-leader trace`
  std::chrono::milliseconds sweep_interval{1000};
  claim_options claim;
};

/// What main() runs: the worker's options and where /metrics is served (none: not served).
struct worker_command {
  worker_options opts;
  std::optional<listen_address> metrics_at;
};

/// The worker's own options (the common ones are added by parse_command_line).
boost::program_options::options_description worker_option_description();

/// Reads the parsed command line; PUSHONCE_WAIT_REPLICAS and PUSHONCE_METRICS_LISTEN fill
/// what it does not give. Throws usage_error.
worker_command parse_worker_options(const command_line& cl);

}  // namespace pushonce::worker
