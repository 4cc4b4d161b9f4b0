// pushonce-worker: claims bus messages and delivers the ones it wins (docs/protocol.md).

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <optional>

#include "core/defaults.hpp"
#include "core/exit_on_exception.hpp"
#include "core/hangup.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/metrics_listener.hpp"
#include "core/names.hpp"
#include "core/program.hpp"
#include "worker/bus_worker.hpp"

namespace po = boost::program_options;
namespace asio = boost::asio;
using namespace pushonce;

int main(int argc, char** argv) {
  po::options_description own("worker options");
  own.add_options()("id", po::value<std::string>(),
                    "worker name (default: w-<pid>-<random>; the units give <host>-<instance>)")(
      "concurrency", po::value<std::size_t>()->default_value(64), "messages in flight at once")(
      "max-queued-bytes", po::value<std::size_t>()->default_value(64u << 20),
      "bytes of bus payloads held while every claim slot is busy; beyond: dropped (the "
      "sweeper re-drives them from the outbox)")(
      "lease-ms", po::value<long long>()->default_value(5000), "how long a claim is held (ms)")(
      "trace", po::bool_switch(), "also record per-event detail (claims) for `trace`")(
      "no-trace", po::bool_switch(), "no per-event detail for `trace` (the default)")(
      "max-attempts", po::value<long long>()->default_value(5),
      "leases a message may take before it goes to the dead-letter stream")(
      "sweep-interval-ms", po::value<long long>()->default_value(1000),
      "how often the recovery sweeper looks for undelivered outbox entries (ms)")(
      "claim-batch", po::value<std::size_t>()->default_value(200),
      "messages claimed per claim.lua call (1-200)")(
      "inbox-maxlen", po::value<long long>()->default_value(1000), "messages kept per user inbox")(
      "inbox-idle-ms", po::value<long long>()->default_value(7LL * 24 * 3600 * 1000),
      "an inbox untouched this long expires (ms)")(
      "wait-replicas", po::value<int>(),
      "0-16: confirm each delivery on N replicas (WAIT) before publishing it (env "
      "PUSHONCE_WAIT_REPLICAS, default 0: no WAIT)")(
      "wait-replicas-timeout-ms", po::value<long long>()->default_value(100),
      "how long WAIT waits for the replicas (1-60000 ms); then the frames are published anyway "
      "and counted as wait_replicas_timeout")(
      "metrics-listen", po::value<std::string>()->value_name("ADDR"),
      "serve GET /metrics (Prometheus: this worker's counters) and /healthz on HOST:PORT (env "
      "PUSHONCE_METRICS_LISTEN; default: none)");
  program_info info{"pushonce-worker",
                    "usage: pushonce-worker [--id NAME] [--concurrency N] [--lease-ms MS] "
                    "[--bus-shards N] [--redis URL | --redis-cluster URL | --redis-sentinel URL] "
                    "[--namespace NS] [--log-level L]\n"};

  return run_program(argc, argv, info, own, [&](command_line& cl) {
    worker::worker_options opts;
    opts.id = cl.vm.count("id") ? cl.vm["id"].as<std::string>() : make_process_id("w");
    if (!valid_name(opts.id))
      throw usage_error("--id: use 1-128 characters of A-Z a-z 0-9 . _ @ -");
    opts.concurrency = cl.vm["concurrency"].as<std::size_t>();
    opts.max_queued_bytes = cl.vm["max-queued-bytes"].as<std::size_t>();
    if (opts.max_queued_bytes == 0) throw usage_error("--max-queued-bytes must be positive");
    opts.max_batch = cl.vm["claim-batch"].as<std::size_t>();
    if (opts.max_batch == 0 || opts.max_batch > 200)
      throw usage_error("--claim-batch must be 1-200");
    auto lease = cl.vm["lease-ms"].as<long long>();
    auto window = cl.common.retention.dedup_window.count();
    auto maxlen = cl.vm["inbox-maxlen"].as<long long>();
    auto idle = cl.vm["inbox-idle-ms"].as<long long>();
    if (opts.concurrency == 0 || lease <= 0 || window <= 2 * lease || maxlen <= 0 || idle <= 0)
      throw usage_error(
          "--concurrency, --lease-ms, --inbox-* must be positive and "
          "--dedup-window-ms longer than twice the lease");
    if (!cl.positional.empty()) throw usage_error("unexpected argument '" + cl.positional[0] + "'");
    opts.claim.max_attempts = cl.vm["max-attempts"].as<long long>();
    opts.trace = cl.vm["trace"].as<bool>() && !cl.vm["no-trace"].as<bool>();
    auto sweep = cl.vm["sweep-interval-ms"].as<long long>();
    if (opts.claim.max_attempts <= 0 || sweep <= 0)
      throw usage_error("--max-attempts and --sweep-interval-ms must be positive");
    opts.sweep_interval = std::chrono::milliseconds(sweep);
    opts.claim.lease = std::chrono::milliseconds(lease);
    opts.claim.dedup_window = std::chrono::milliseconds(window);
    opts.claim.inbox_maxlen = maxlen;
    opts.claim.inbox_idle = std::chrono::milliseconds(idle);
    {
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
      opts.claim.wait_replicas = static_cast<int>(n.value_or(0));
      opts.claim.wait_timeout = std::chrono::milliseconds(t);
    }
    auto metrics_at = metrics_listen_option(
        cl.vm.count("metrics-listen") ? std::optional(cl.vm["metrics-listen"].as<std::string>())
                                      : std::nullopt);
    log::set_identity("worker", opts.id);

    asio::io_context io;
    worker::bus_worker w(io.get_executor(), redis_options(cl.common, "pushonce-worker:" + opts.id),
                         keys(cl.common.ns, cl.common.bus_shards), opts);
    // Nothing this worker does can be right with the wrong layout: it stops before it
    // delivers anything, with the exit status of a usage error (as for a bad option).
    w.on_layout_conflict([](const std::string& why) {
      log::error("{}", why);
      std::_Exit(exit_usage);
    });
    w.start();
    log::info(
        "started (concurrency {}, lease {} ms, wait replicas {}, redis {}, namespace {}, {} bus "
        "shards)",
        opts.concurrency, lease, opts.claim.wait_replicas, redis_display(cl.common), cl.common.ns,
        cl.common.bus_shards);

    hangup_guard hangups(io);
    std::unique_ptr<metrics_listener> metrics;
    if (metrics_at) {
      metrics = std::make_unique<metrics_listener>(
          io.get_executor(), *metrics_at, [&w, id = opts.id]() -> asio::awaitable<std::string> {
            co_return worker_metrics_text(id, w.counters());
          });
      metrics->start();
      log::info("metrics on {}:{}", metrics_at->host, metrics->port());
    }
    asio::signal_set signals(io, SIGTERM, SIGINT);
    signals.async_wait([&](auto ec, int sig) {
      if (ec) return;
      log::info("signal {}: draining", sig);
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            co_await w.stop(std::chrono::milliseconds(5000));
            io.stop();
          },
          exit_on_exception("worker shutdown"));
    });
    io.run();
    if (metrics) metrics->stop();
    const auto& c = w.counters();
    log::info("stopped: received {} won {} lost {} delivered {} failed {}", c.received, c.won,
              c.lost, c.delivered, c.failed);
    return exit_ok;
  });
}
