#pragma once
// The leader's /metrics (--metrics-listen): its own figures always; the system-wide ones
// (NS:stats, live workers and gateways, dead letters, sweeper lag) only while it holds the
// lease, so that they are exported once per namespace.

#include <boost/asio/awaitable.hpp>
#include <string>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "leader/daemon_options.hpp"

namespace pushonce::leader {

/// This leader's own figures at the scrape.
struct leader_figures {
  bool leading = false;
  long long token = 0;  // the lease's fencing token (0 while standing by)
  unsigned long long assigned = 0;
};

/// The Prometheus text of a scrape: one pipelined read while leading.
boost::asio::awaitable<std::string> leader_metrics_text(redis::connection& conn, const keys& k,
                                                        const daemon_options& opts,
                                                        leader_figures own_figures);

}  // namespace pushonce::leader
