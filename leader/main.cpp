// pushonce-leader: `run` is the queue daemon; every other subcommand is the admin CLI.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "core/env_file.hpp"
#include "core/exit_on_exception.hpp"
#include "core/hangup.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/metrics_listener.hpp"
#include "core/names.hpp"
#include "core/program.hpp"
#include "leader/admin.hpp"
#include "leader/leader_daemon.hpp"
#include "leader/queue_list.hpp"

namespace po = boost::program_options;
namespace asio = boost::asio;
using namespace pushonce;

namespace {

constexpr const char* usage_text =
    "usage: pushonce-leader run [--queue Q]... [--accept-timeout S] [--lease-ms MS]\n"
    "                           [--assign-batch N] [--opening-batch N] [--metrics-listen ADDR]\n"
    "       pushonce-leader join|leave|position USER [--queue Q] [--json]\n"
    "       pushonce-leader accept USER [--queue Q] [--id ASSIGNMENT] [--json]\n"
    "       pushonce-leader token USER [--ttl SECONDS] (signs with PUSHONCE_JWT_SECRET)\n"
    "       pushonce-leader queue [--queue Q] [--limit N] [--offset N] [--json]\n"
    "       pushonce-leader resource add ID... [--meta JSON] | release ID | remove ID | list\n"
    "       pushonce-leader publish USER JSON [--id KEY] [--json]\n"
    "       pushonce-leader settings [--max-waiting N] [--abandon-after S] [--accept-timeout S]\n"
    "                                [--join-pow-bits N] [--queue Q] [--json]\n"
    "       pushonce-leader pause|resume|close [--queue Q] [--json]\n"
    "       pushonce-leader open [--at TIME] [--shuffle] [--queue Q] [--json]\n"
    "       pushonce-leader status [--queue Q] [--json]\n"
    "       pushonce-leader trace ID [--json]\n"
    "       pushonce-leader disconnect USER [--revoke [--for SECONDS]] [--json]\n"
    "       pushonce-leader admission verify TOKEN [--json]\n"
    "       pushonce-leader dead-letters list [--limit N] | replay ID | purge [--json]\n"
    "Admin commands read /etc/pushonce/pushonce.env when it exists and can be read (--env-file "
    "FILE for another; the environment wins).\n";

// A --queue list that lacks a queue of the namespace is refused before the daemon starts
// (the daemon checks again every third of a lease). An unreachable Redis is not a
// conflict: the daemon's own check runs once it answers.
std::optional<std::string> queue_conflict_at_start(const common_options& common,
                                                   const std::vector<std::string>& mine) {
  auto ro = redis_options(common, "pushonce-leader:check");
  ro.connect_timeout = std::chrono::milliseconds(1000);
  ro.command_timeout = std::chrono::milliseconds(2000);
  asio::io_context io;
  auto conn = redis::connection::create(io.get_executor(), ro);
  conn->start();
  keys k(common.ns, common.bus_shards);
  std::optional<std::string> out;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        redis::command cmd{"SMEMBERS", k.plain("queues")};
        auto r = co_await conn->exec(std::move(cmd));
        if (r.ok()) {
          std::vector<std::string> registered;
          for (auto& e : r.value.elements) registered.push_back(e.str);
          auto missing = leader::queues_missing_from(mine, std::move(registered));
          if (!missing.empty())
            out = leader::queue_conflict_message(missing, mine, k.plain("queues"));
        }
        conn->stop();
      },
      exit_on_exception("queue list check"));
  io.run();
  return out;
}

int run_daemon(command_line& cl) {
  leader::daemon_options opts;
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
  if (cl.positional.size() > 1) throw usage_error("unexpected argument '" + cl.positional[1] + "'");
  opts.accept_timeout = std::chrono::milliseconds(static_cast<long long>(accept * 1000));
  opts.lease = std::chrono::milliseconds(lease);
  opts.retention = cl.common.retention;
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
  leader::leader_daemon d(io.get_executor(), redis_options(cl.common, "pushonce-leader:" + opts.id),
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

int run_command(command_line& cl, bool json) {
  leader::reporter out(json);
  if (cl.positional.empty()) return out.usage("no command given (see pushonce-leader --help)");
  auto command = cl.positional[0];
  std::vector<std::string> args(cl.positional.begin() + 1, cl.positional.end());
  std::string queue = "default";
  if (cl.vm.count("queue")) {
    auto qs = cl.vm["queue"].as<std::vector<std::string>>();
    if (qs.size() != 1) return out.usage("give --queue once");
    queue = qs[0];
  }
  // One "error:" line on stderr is the contract: the client's reconnect warnings stay
  // quiet unless debug logging was asked for.
  if (cl.common.log_level != log::level::debug) log::set_level(log::level::error);
  // Admin commands give up on an unreachable Redis within 5 s (docs/protocol.md).
  auto ro = redis_options(cl.common, "pushonce-leader:admin");
  ro.connect_timeout = std::chrono::milliseconds(1000);
  ro.command_timeout = std::chrono::milliseconds(3000);
  ro.backoff_max = std::chrono::milliseconds(250);
  ro.fail_on_login_refusal = true;  // a wrong password or database: say so at once
  asio::io_context io;
  auto conn = redis::connection::create(io.get_executor(), ro);
  conn->start();
  leader::admin_context ctx{conn,
                            keys(cl.common.ns, cl.common.bus_shards),
                            out,
                            cl.vm,
                            std::move(args),
                            queue,
                            cl.common.retention,
                            cl.common.max_data_bytes,
                            cl.common.admission};
  int code = 1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        code = co_await leader::run_admin(ctx, command);
        conn->stop();
      },
      exit_on_exception("admin command"));
  io.run();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  log::set_tag("leader");
  bool json = false;
  for (int i = 1; i < argc; ++i) json |= std::strcmp(argv[i], "--json") == 0;

  po::options_description own("leader options");
  own.add_options()("queue", po::value<std::vector<std::string>>()->composing(),
                    "queue name (default: default)")(
      "json", po::bool_switch(), "print one JSON object")("limit", po::value<long long>(),
                                                          "queue: how many users to list")(
      "offset", po::value<long long>(), "queue: how many to skip from the head (pages)")(
      "meta", po::value<std::string>(), "resource add: metadata JSON")(
      "id", po::value<std::string>(),
      "publish: idempotency key; accept: the assignment id; run: leader name")(
      "ttl", po::value<long long>(), "token: lifetime in seconds")(
      "accept-timeout", po::value<double>()->default_value(0),
      "run: seconds to accept (0: never expire); settings: the queue's own")(
      "lease-ms", po::value<long long>()->default_value(5000), "run: leader lease (ms)")(
      "assign-batch", po::value<long long>()->default_value(200),
      "run: the most assignments (or expiries) one script call makes, 1..1000")(
      "opening-batch", po::value<long long>()->default_value(1000),
      "run: pre-queued users drawn or moved per script call at an opening, 1..1000")(
      "max-waiting", po::value<long long>(), "settings: the most users waiting (0: no cap)")(
      "join-pow-bits", po::value<long long>(),
      "settings: leading zero bits of the proof of work a join needs (0: off, up to 32)")(
      "abandon-after", po::value<long long>(),
      "settings: seconds without a session before a user leaves the line (0: never)")(
      "at", po::value<std::string>(), "open: when (RFC 3339 or ms since the epoch)")(
      "shuffle", po::bool_switch(), "open: shuffle the pre-queue at the opening")(
      "revoke", po::bool_switch(), "disconnect: also refuse the user's tokens issued until now")(
      "for", po::value<long long>(),
      "disconnect --revoke: seconds the revocation is kept (default 86400)")(
      "env-file", po::value<std::string>()->value_name("FILE"),
      "read PUSHONCE_* settings from FILE (systemd EnvironmentFile syntax; the environment "
      "wins), and its secrets/redis_url and secrets/jwt_secret when readable; admin commands "
      "default to /etc/pushonce/pushonce.env when it exists and can be read")(
      "metrics-listen", po::value<std::string>()->value_name("ADDR"),
      "run: serve GET /metrics (Prometheus) and /healthz on HOST:PORT (env "
      "PUSHONCE_METRICS_LISTEN; default: none)");
  // The environment file goes first: the common options read the variables it sets.
  // Admin commands default to the installed one; `run` reads one only when named.
  {
    std::string env_file;
    bool daemon = false, given = false;
    for (int i = 1; i < argc; ++i) {
      std::string_view a = argv[i];
      if (a == "run") daemon = true;
      if (a == "--env-file" && i + 1 < argc) {
        env_file = argv[i + 1];
        given = true;
      } else if (a.rfind("--env-file=", 0) == 0) {
        env_file = std::string(a.substr(11));
        given = true;
      }
    }
    if (given || !daemon) {
      try {
        load_env_file(env_file);
      } catch (const usage_error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return exit_usage;
      }
    }
  }
  program_info info{"pushonce-leader", usage_text, json};
  return run_program(argc, argv, info, own, [&](command_line& cl) {
    if (!cl.positional.empty() && cl.positional[0] == "run") return run_daemon(cl);
    return run_command(cl, json);
  });
}
