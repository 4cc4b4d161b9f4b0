#pragma once
// One deployment of the real programs for e2e and chaos tests: pushonce-leader `run`,
// pushonce-worker and pushonce-gateway processes in one namespace on one redis-server,
// configured through the environment (PUSHONCE_REDIS, PUSHONCE_NAMESPACE,
// PUSHONCE_LOG_LEVEL), plus the admin CLI, readiness waits and the logs for failure
// messages. Every process started is kept (a killed one for its logs) and SIGKILLed when
// the deployment dies.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sync_redis.hpp"

namespace pushonce::test {

class redis_server;

/// One redis-server shared by every test case of a test program (kept apart by namespace).
redis_server& shared_redis();

/// The path of a program under test (pushonce-leader, pushonce-worker, pushonce-gateway,
/// pushonce-bench): in $PUSHONCE_TEST_BIN_DIR when set (deploy/test.sh's asan tier runs the
/// e2e tests against the sanitized programs that way), else in this build's bin/.
std::string program_path(const std::string& name);

/// A CLI run; stdout parsed when it is JSON.
struct cli_result {
  run_result run;
  boost::json::value out;  // null when stdout is not JSON
  std::chrono::milliseconds elapsed{};

  int code() const { return run.exit_code; }
  /// The "error" field of a JSON answer ("" when there is none).
  std::string error() const;
  /// True when stderr has a line starting with "error:".
  bool error_line() const;
  /// Exit code and output, for failure messages.
  std::string describe() const;
};

/// Runs a program (a name from program_path, or a path) to completion with `env` changes.
cli_result run_cli(const std::string& program, const std::vector<std::string>& args,
                   const environment& env = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(20));

/// A counter of a `status --json` answer (-1 when absent).
long long counter(const boost::json::object& status, const char* name);

/// A string field of a JSON object ("" when absent or not a string).
std::string str_field(const boost::json::object& o, const char* name);
/// A number field of a JSON object (-1 when absent or not a number).
long long int_field(const boost::json::object& o, const char* name);
/// `text` parsed, or null when it is not JSON.
boost::json::value parse_or_null(const std::string& text);

struct deployment_options {
  std::string redis_url;
  std::uint16_t redis_port = 0;
  std::string ns;
  environment env;       // more variables, for every program and CLI call
  std::string logs_dir;  // empty: each process in its own temporary directory
  std::string log_level = "warn";
};

class deployment {
 public:
  enum class kind { leader, worker, gateway };

  explicit deployment(deployment_options o);
  /// A fresh namespace "<prefix>-<what>-<pid>-<n>" on the shared redis-server.
  deployment(const std::string& prefix, const std::string& what, environment env = {});
  ~deployment();
  deployment(const deployment&) = delete;
  deployment& operator=(const deployment&) = delete;

  // --- programs (an --id NAME is added when `args` have none: l1, w1, g1, ...) ------------
  /// pushonce-leader run ARGS.
  process& start_leader(std::vector<std::string> args = {});
  process& start_worker(std::vector<std::string> args = {});
  /// pushonce-gateway --listen 127.0.0.1:PORT ARGS (PORT 0: a free port).
  process& start_gateway(std::vector<std::string> args = {}, std::uint16_t port = 0);

  /// The i-th process of a kind, in start order (restarted ones count again).
  process& get(kind k, std::size_t i = 0);
  std::size_t count(kind k) const;
  /// The id (--id) and, for gateways, the port of a process.
  const std::string& id_of(const process& p) const;
  std::uint16_t port_of(const process& p) const;
  /// Every process of a kind, and those of them still running.
  std::vector<process*> all(kind k);
  std::vector<process*> running(kind k);

  // --- the admin CLI ------------------------------------------------------------------------
  /// pushonce-leader ARGS in this deployment's environment (plus `extra`).
  cli_result admin(std::vector<std::string> args, environment extra = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(20));
  /// admin(ARGS --json) that must succeed with a JSON object; throws std::runtime_error.
  boost::json::object admin_json(std::vector<std::string> args);
  /// `publish USER DATA --json`: the new id; throws when refused.
  std::string publish(const std::string& user, const std::string& data_json);
  boost::json::object status();
  /// A counter of `status` (-1 when absent).
  long long counter(const char* name);

  // --- waits ----------------------------------------------------------------------------------
  /// Every running leader holds or waits for the lease and listens for wake-ups (one of
  /// them holds it), every running worker hears the bus, every running gateway is healthy.
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(15));
  /// Why wait_ready failed, with the logs.
  const std::string& ready_failure() const { return ready_failure_; }
  /// PUBSUB NUMSUB channel == n within the timeout.
  bool wait_subscribers(const std::string& channel, long long n,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // --- logs -----------------------------------------------------------------------------------
  /// stderr of every process.
  std::string logs() const;
  /// Only the warning and error lines of every process (tails), at most max_chars.
  std::string digest(std::size_t max_chars = 12000) const;

  const std::string& ns() const { return opts_.ns; }
  const std::string& url() const { return opts_.redis_url; }
  const keys& k() const { return keys_; }
  sync_redis& redis() { return redis_; }
  /// The environment every program and CLI call gets.
  const environment& env() const { return env_; }
  /// NS:suffix, and a user's inbox stream.
  std::string key(const std::string& suffix) const { return keys_.plain(suffix); }
  std::string inbox_key(const std::string& user) const { return keys_.user(user, "inbox"); }

 private:
  struct entry {
    kind what;
    std::string id;
    std::uint16_t port = 0;
    std::unique_ptr<process> proc;
  };
  process& spawn(kind what, std::vector<std::string> args, std::uint16_t port);
  std::string check_ready();
  bool client_subscribed(const std::string& client_name);

  deployment_options opts_;
  keys keys_;
  environment env_;
  sync_redis redis_;
  std::vector<entry> procs_;
  std::string ready_failure_;
};

}  // namespace pushonce::test
