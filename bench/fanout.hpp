#pragma once
// A whole run of `fanout` or `idle`: sessions opened over the gateways, messages
// published on the schedule, frames verified, then the report.

#include <functional>
#include <thread>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/report.hpp"

namespace pushonce::bench {

/// Runs the workload of `o` and fills `out`. `other_threads`: threads of this process
/// that are not the load generator (the floor stand-in), whose CPU is reported apart.
void run_fanout(const bench_options& o, run_report& out,
                const std::vector<pthread_t>& other_threads = {});

}  // namespace pushonce::bench
