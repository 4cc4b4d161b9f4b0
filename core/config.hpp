#pragma once
// Command-line and environment options common to every program (docs/protocol.md "Programs and
// common options"): --redis / PUSHONCE_REDIS, --redis-cluster / PUSHONCE_REDIS_CLUSTER,
// --redis-sentinel / PUSHONCE_REDIS_SENTINEL,
// --namespace / PUSHONCE_NAMESPACE, --log-level / PUSHONCE_LOG_LEVEL, --log-format /
// PUSHONCE_LOG_FORMAT, --admission-* / PUSHONCE_ADMISSION_*, --max-data-bytes /
// PUSHONCE_MAX_DATA_BYTES, --bus-shards / PUSHONCE_BUS_SHARDS, --help, --version. Common options
// may stand anywhere on the command line. Parsing uses Boost.Program_options.

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/admission_token.hpp"
#include "core/log.hpp"
#include "core/redis/endpoint.hpp"
#include "core/retention.hpp"

namespace pushonce {

/// Exit codes of every program.
enum exit_code : int { exit_ok = 0, exit_failure = 1, exit_usage = 2 };

/// A bad command line: printed as "error: <what>", exit code 2.
struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct common_options {
  std::string redis_url = "redis://127.0.0.1:6379";
  redis::endpoint redis;  // with the --redis-tls-* files when it is rediss://
  // --redis-cluster: the seed nodes of a Redis Cluster (empty: a single Redis at `redis`).
  // When given, `redis` is the first seed and --redis is not used.
  std::vector<redis::endpoint> redis_cluster;
  // --redis-sentinel: the sentinels of a monitored master (not enabled: none). When given,
  // `redis` is the first sentinel (for log lines) and --redis is not used.
  redis::sentinel_config redis_sentinel;
  std::string ns = "pushonce";
  log::level log_level = log::level::info;
  log::format log_format = log::format::text;
  pushonce::retention retention;
  /// --max-data-bytes: the largest serialised `data` of one published message (the
  /// publish API answers 413, the CLI refuses it); 64 KiB by default.
  std::size_t max_data_bytes = 64 * 1024;
  /// --bus-shards: how many bus shards custom publishes spread over (1-16); every process
  /// of one deployment must use the same number. 1 on a single Redis; 16 by default on a
  /// Redis Cluster (the outboxes and bus channels then spread over the masters).
  unsigned bus_shards = 1;
  /// --admission-key, --admission-verify-keys, --admission-issuer, --admission-ttl and
  /// PUSHONCE_ADMISSION_SECRET (core/admission_token.hpp): the files are checked readable
  /// here, their keys are read by admission::load.
  admission::options admission;
};

/// Where the Redis is, for the start-up log line: host:port, "cluster via host:port,...", or
/// "master 'NAME' of the sentinels host:port,...".
std::string redis_display(const common_options& c);

/// --bus-shards when not given: 1 on a single Redis, 16 on a Redis Cluster.
unsigned default_bus_shards(bool cluster);

struct command_line {
  common_options common;
  boost::program_options::variables_map vm;  // the program's own options
  std::vector<std::string> positional;       // words that are not options, in order
  bool help = false;
  bool version = false;
};

/// Parses argv with the program's own options added to the common ones; environment
/// variables fill what the command line does not give. Throws usage_error on unknown
/// options, missing values, a bad URL, a bad log level or a bad namespace.
command_line parse_command_line(int argc, const char* const* argv,
                                const boost::program_options::options_description& own);

/// A secret from the environment: NAME when set and non-empty, else the contents of the
/// file named by NAME_FILE (trailing line breaks removed; how systemd credentials and
/// files readable only by the service user are passed), else std::nullopt. Throws
/// usage_error when both are set, or when the file cannot be read or is empty.
std::optional<std::string> secret_from_env(const std::string& name);

/// The text printed by --help: `usage` then every option with its help line.
std::string help_text(std::string_view usage,
                      const boost::program_options::options_description& own);

}  // namespace pushonce
