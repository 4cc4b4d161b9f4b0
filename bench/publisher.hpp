#pragma once
// The publishing side of a run: --inflight keep-alive connections to POST /api/publish,
// each taking the next batch when it is due (bench/rate_schedule.hpp). A request without
// an answer, or answered 429 or 5xx, is sent again with the same idempotency keys until
// the run's grace period ends: the system must not publish a message twice because the
// tool asked twice.

#include <boost/asio/awaitable.hpp>
#include <map>
#include <string>

#include "bench/rate_schedule.hpp"
#include "bench/run_state.hpp"
#include "bench/verifier.hpp"

namespace pushonce::bench {

struct publish_totals {
  std::uint64_t requests = 0, retries = 0, late_batches = 0;
  std::map<std::string, std::uint64_t> errors;
  std::int64_t first_send = -1, last_answer = 0;  // ns since the run started
};

/// Publishes the whole schedule; returns when every batch was answered or given up.
/// `stop_sending_at` (ns since the start, 0: none) ends an unpaced run of --duration.
boost::asio::awaitable<void> publish_all(run_state& run, const rate_schedule& schedule,
                                         delivery_ledger& ledger, publish_totals& totals,
                                         std::int64_t phase_start, std::int64_t stop_sending_at);

}  // namespace pushonce::bench
