// `pushonce-leader run`: the daemon's options checked, the queue-list check at start, the
// daemon, its /metrics, and the shutdown on SIGTERM/SIGINT or a queue conflict.
#include "leader/run_daemon.hpp"

#include <fmt/ranges.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdlib>
#include <memory>
#include <optional>

#include "core/exit_on_exception.hpp"
#include "core/hangup.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/metrics_listener.hpp"
#include "core/names.hpp"
#include "core/program.hpp"
#include "leader/leader_daemon.hpp"
#include "leader/queue_list_check.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

namespace {

// --wait-replicas, else PUSHONCE_WAIT_REPLICAS (as the worker reads it), else 0.
void read_wait_replicas(const command_line& cl, daemon_options& opts) {
  std::optional<long long> n;
  if (cl.vm.count("wait-replicas")) {
    n = cl.vm["wait-replicas"].as<int>();
  } else if (const char* env = std::getenv("PUSHONCE_WAIT_REPLICAS"); env && *env) {
    char* end = nullptr;
    n = std::strtoll(env, &end, 10);
    if (*end != '\0') n = -1;
  }
  if (n && (*n < 0 || *n > 16)) throw usage_error("--wait-replicas: expected 0-16");
  auto t = cl.vm["wait-replicas-timeout-ms"].as<long long>();
  if (t < 1 || t > 60000) throw usage_error("--wait-replicas-timeout-ms: expected 1-60000");
  opts.wait_replicas = static_cast<int>(n.value_or(0));
  opts.wait_timeout = std::chrono::milliseconds(t);
}

}  // namespace

int run_daemon(command_line& cl) {
  daemon_options opts;
  opts.id = cl.vm.count("id") ? cl.vm["id"].as<std::string>() : make_process_id("l");
  if (!valid_name(opts.id)) throw usage_error("--id: use 1-128 characters of A-Z a-z 0-9 . _ @ -");
  if (cl.vm.count("queue")) opts.queues = cl.vm["queue"].as<std::vector<std::string>>();
  for (auto& q : opts.queues)
    if (!valid_name(q)) throw usage_error("--queue: invalid queue name '" + q + "'");
  auto accept = cl.vm["accept-timeout"].as<double>();
  auto lease = cl.vm["lease-ms"].as<long long>();
  if (accept < 0 || lease < 300)
    throw usage_error("--accept-timeout must be >= 0 and --lease-ms >= 300");
  opts.batch = cl.vm["assign-batch"].as<long long>();
  if (opts.batch < 1 || opts.batch > 1000) throw usage_error("--assign-batch must be 1..1000");
  opts.opening_batch = cl.vm["opening-batch"].as<long long>();
  if (opts.opening_batch < 1 || opts.opening_batch > 1000)
    throw usage_error("--opening-batch must be 1..1000");
  auto grace = cl.vm["gateway-grace-ms"].as<long long>();
  if (grace < 1000 || grace > 600000) throw usage_error("--gateway-grace-ms must be 1000..600000");
  opts.gateway_grace = std::chrono::milliseconds(grace);
  if (cl.positional.size() > 1) throw usage_error("unexpected argument '" + cl.positional[1] + "'");
  opts.accept_timeout = std::chrono::milliseconds(static_cast<long long>(accept * 1000));
  opts.lease = std::chrono::milliseconds(lease);
  opts.retention = cl.common.retention;
  read_wait_replicas(cl, opts);
  try {
    opts.admission_signer = admission::load(cl.common.admission).sign;
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  opts.admission_issuer = cl.common.admission.issuer;
  opts.admission_ttl = cl.common.admission.ttl;
  auto metrics_at = metrics_listen_option(
      cl.vm.count("metrics-listen") ? std::optional(cl.vm["metrics-listen"].as<std::string>())
                                    : std::nullopt);
  log::set_identity("leader", opts.id);

  asio::io_context io;
  if (auto conflict = queue_conflict_at_start(cl.common, opts.queues)) {
    log::error("{}", *conflict);
    return exit_usage;
  }
  leader_daemon d(io.get_executor(), redis_options(cl.common, "pushonce-leader:" + opts.id),
                  keys(cl.common.ns, cl.common.bus_shards), opts);
  std::unique_ptr<metrics_listener> metrics;
  if (metrics_at) {
    metrics = std::make_unique<metrics_listener>(io.get_executor(), *metrics_at,
                                                 [&d] { return d.metrics_text(); });
    metrics->start();
    log::info("metrics on {}:{}", metrics_at->host, metrics->port());
  }
  int exit_code = exit_ok;
  // Releases the lease (when held) and stops: on SIGTERM/SIGINT and on a queue conflict.
  auto shut_down = [&] {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await d.stop();
          io.stop();
        },
        exit_on_exception("leader shutdown"));
  };
  // A --queue list that lacks a queue of the namespace: a configuration error (exit 2,
  // which the unit does not restart).
  d.on_queue_conflict([&](const std::string& why) {
    log::error("{}", why);
    exit_code = exit_usage;
    shut_down();
  });
  d.start();
  // The daemon publishes no custom message; --bus-shards is shown so that a deployment's
  // settings can be checked in one place (every process must use the same number).
  log::info(
      "started (queues {}, lease {} ms, accept timeout {} ms, {} assignments per call, redis {}, "
      "namespace {}, {} bus shards, admission tokens {})",
      fmt::join(opts.queues, ","), lease, opts.accept_timeout.count(), opts.batch,
      redis_display(cl.common), cl.common.ns, cl.common.bus_shards,
      !opts.admission_signer ? std::string("off (null)")
      : opts.admission_signer->public_half()
          ? "ES256 kid " + opts.admission_signer->public_half()->kid
          : std::string("HS256"));
  hangup_guard hangups(io);
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](auto ec, int sig) {
    if (ec) return;
    log::info("signal {}: releasing the lease", sig);
    shut_down();
  });
  io.run();
  if (metrics) metrics->stop();
  log::info("stopped after {} assignments", d.assigned());
  return exit_code;
}

}  // namespace pushonce::leader
