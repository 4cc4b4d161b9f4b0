// pushonce-worker: claims bus messages and delivers the ones it wins (docs/protocol.md).

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
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
#include "worker/worker_options.hpp"

namespace asio = boost::asio;
using namespace pushonce;

int main(int argc, char** argv) {
  program_info info{"pushonce-worker",
                    "usage: pushonce-worker [--id NAME] [--concurrency N] [--lease-ms MS] "
                    "[--bus-shards N] [--redis URL | --redis-cluster URL | --redis-sentinel URL] "
                    "[--namespace NS] [--log-level L]\n"};

  return run_program(argc, argv, info, worker::worker_option_description(), [&](command_line& cl) {
    auto command = worker::parse_worker_options(cl);
    const auto& opts = command.opts;
    const auto& metrics_at = command.metrics_at;
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
        opts.concurrency, opts.claim.lease.count(), opts.claim.wait_replicas,
        redis_display(cl.common), cl.common.ns, cl.common.bus_shards);

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
