#pragma once
// What a run found, and the three ways it is printed: a progress line a second, the
// summary table, and one JSON object (--json). The exit status follows from it too.

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/latency_histogram.hpp"
#include "bench/verifier.hpp"

namespace pushonce::bench {

struct process_usage {
  double rss_bytes_before = 0, rss_bytes_after = 0;  // summed over the --pids
  double cpu_s = 0;                                  // their CPU during the message phase
};

struct run_report {
  std::string mode;  // fanout, idle, floor
  std::uint64_t sessions = 0, users = 0, gateways = 0, threads = 0;
  double rate = 0;  // asked for; 0 = as fast as possible
  std::uint64_t batch = 0, inflight = 0;

  // sessions
  std::uint64_t opened = 0, connect_failures = 0, disconnects = 0, sessions_down_at_end = 0;
  latency_histogram connect_us;  // TCP connect to welcome
  double connect_s = 0;          // all sessions open

  // publishing
  std::uint64_t requests = 0, retries = 0;
  std::map<std::string, std::uint64_t> publish_errors;  // "503", "timeout", ...
  std::uint64_t late_batches = 0;                       // sent more than 1 ms after they were due
  double publish_s = 0;                                 // first request to last answer
  double delivery_s = 0;                                // first request to the last frame received

  // verification
  ledger_totals ledger;
  session_counts frames;
  std::uint64_t error_frames = 0, bad_frames = 0;

  latency_histogram latency_us;  // due → frame received
  // The frame's `ts` (when the system accepted the message, its clock, ms) → received, this
  // machine's clock: the publish request's own time left out; only as good as the two
  // clocks agree, and ms-granular.
  latency_histogram accepted_us;

  // cost
  double tool_cpu_s = 0;           // the load generator's threads over the message phase
  double standin_cpu_s = 0;        // floor: the stand-in's thread
  double tool_rss_bytes = 0;       // this process at the end
  double tool_rss_bytes_idle = 0;  // before the sessions opened
  process_usage system;            // --pids
  std::uint64_t duplicate_every = 0;

  /// Delivered frames per second over the delivery phase.
  double frames_per_s() const;
  /// Published messages per second.
  double messages_per_s() const;
  /// Why the run failed, one reason each (empty: it passed): any duplicate, loss,
  /// out-of-order or unannounced gap, a message delivered though its publish was refused,
  /// no session opened; and, when it published: a refused or unanswered publish, or
  /// nothing published at all (the run checked nothing).
  std::vector<std::string> failures() const;
  /// 1 when failures() names any, else 0.
  int exit_status() const;
  boost::json::object to_json() const;
  std::string table() const;
};

/// One progress line: seconds since the start, sent, received, rates over the last
/// second, p50/p99 so far (ms), duplicates, lost so far (owed but missing at that moment
/// is not known until the end: "missing" is published × sessions − received), errors.
std::string progress_line(double t_s, std::uint64_t sent, std::uint64_t received, double sent_per_s,
                          double received_per_s, const latency_histogram& h,
                          std::uint64_t duplicates, std::uint64_t errors);

}  // namespace pushonce::bench
