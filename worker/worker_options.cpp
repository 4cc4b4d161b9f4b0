#include "worker/worker_options.hpp"

#include <boost/program_options/value_semantic.hpp>
#include <cstdlib>

#include "core/heartbeat.hpp"
#include "core/names.hpp"

namespace pushonce::worker {

namespace po = boost::program_options;

po::options_description worker_option_description() {
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
  return own;
}

namespace {

// --wait-replicas, else PUSHONCE_WAIT_REPLICAS, else 0; and its timeout.
void read_worker_wait_replicas(const po::variables_map& vm, claim_options& claim) {
  std::optional<long long> n;
  if (vm.count("wait-replicas")) {
    n = vm["wait-replicas"].as<int>();
  } else if (const char* env = std::getenv("PUSHONCE_WAIT_REPLICAS"); env && *env) {
    char* end = nullptr;
    n = std::strtoll(env, &end, 10);
    if (*end != '\0') n = -1;
  }
  if (n && (*n < 0 || *n > 16)) throw usage_error("--wait-replicas: expected 0-16");
  auto t = vm["wait-replicas-timeout-ms"].as<long long>();
  if (t < 1 || t > 60000) throw usage_error("--wait-replicas-timeout-ms: expected 1-60000");
  claim.wait_replicas = static_cast<int>(n.value_or(0));
  claim.wait_timeout = std::chrono::milliseconds(t);
}

}  // namespace

worker_command parse_worker_options(const command_line& cl) {
  const auto& vm = cl.vm;
  worker_command out;
  auto& opts = out.opts;
  opts.id = vm.count("id") ? vm["id"].as<std::string>() : make_process_id("w");
  if (!valid_name(opts.id)) throw usage_error("--id: use 1-128 characters of A-Z a-z 0-9 . _ @ -");
  opts.concurrency = vm["concurrency"].as<std::size_t>();
  opts.max_queued_bytes = vm["max-queued-bytes"].as<std::size_t>();
  if (opts.max_queued_bytes == 0) throw usage_error("--max-queued-bytes must be positive");
  opts.max_batch = vm["claim-batch"].as<std::size_t>();
  if (opts.max_batch == 0 || opts.max_batch > 200) throw usage_error("--claim-batch must be 1-200");
  auto lease = vm["lease-ms"].as<long long>();
  auto window = cl.common.retention.dedup_window.count();
  auto maxlen = vm["inbox-maxlen"].as<long long>();
  auto idle = vm["inbox-idle-ms"].as<long long>();
  if (opts.concurrency == 0 || lease <= 0 || window <= 2 * lease || maxlen <= 0 || idle <= 0)
    throw usage_error(
        "--concurrency, --lease-ms, --inbox-* must be positive and "
        "--dedup-window-ms longer than twice the lease");
  if (!cl.positional.empty()) throw usage_error("unexpected argument '" + cl.positional[0] + "'");
  opts.claim.max_attempts = vm["max-attempts"].as<long long>();
  opts.trace = vm["trace"].as<bool>() && !vm["no-trace"].as<bool>();
  auto sweep = vm["sweep-interval-ms"].as<long long>();
  if (opts.claim.max_attempts <= 0 || sweep <= 0)
    throw usage_error("--max-attempts and --sweep-interval-ms must be positive");
  opts.sweep_interval = std::chrono::milliseconds(sweep);
  opts.claim.lease = std::chrono::milliseconds(lease);
  opts.claim.dedup_window = std::chrono::milliseconds(window);
  opts.claim.inbox_maxlen = maxlen;
  opts.claim.inbox_idle = std::chrono::milliseconds(idle);
  read_worker_wait_replicas(vm, opts.claim);
  out.metrics_at = metrics_listen_option(vm.count("metrics-listen")
                                             ? std::optional(vm["metrics-listen"].as<std::string>())
                                             : std::nullopt);
  return out;
}

}  // namespace pushonce::worker
