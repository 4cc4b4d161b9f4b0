#pragma once
// pushonce-bench's command line (docs/benchmarks.md "pushonce-bench"): the subcommand,
// where the gateways are, the workload and the output. Parsed with the other programs'
// option machinery (core/config.hpp); every value is checked here, so a bad one is a
// usage error (exit 2) before any socket opens.

#include <sys/types.h>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pushonce::bench {

/// host:port of a gateway (its WebSocket path is /ws, the publish API /api/publish).
struct endpoint {
  std::string host;
  std::uint16_t port = 0;
};

/// "host:port", "ws://host:port[/ws]" or "http://host:port[/...]"; throws usage_error.
endpoint parse_endpoint(std::string_view text, std::string_view option);

struct bench_options {
  enum class mode { fanout, idle, floor } what = mode::fanout;
  std::vector<endpoint> gateways;  // sessions spread over them; fanout/idle
  endpoint publish;                // the publish API (default: the first gateway)
  std::string api_key;             // --api-key or PUSHONCE_API_KEY
  std::string jwt_secret;          // --jwt-secret or PUSHONCE_JWT_SECRET; empty: dev auth
  std::uint64_t sessions = 200, users = 100;
  std::uint64_t messages = 0;  // 0: the duration decides
  std::chrono::milliseconds duration{0};
  double rate = 0;  // messages/s; 0: as fast as possible
  std::uint64_t batch = 100, inflight = 4;
  std::vector<std::string> sources;  // local addresses to connect from (default: any)
  unsigned threads = 1;
  bool sse = false;                // --transport sse: sessions over GET /sse instead of WebSocket
  std::uint64_t connect_rate = 0;  // new sessions per second (0: as fast as they complete)
  std::uint64_t connect_concurrency = 200;
  bool idempotency_keys = true;           // false: only a 429 is sent again (nothing was published)
  std::chrono::milliseconds grace{5000};  // wait for missing frames after the last publish
  std::chrono::milliseconds linger{300};  // wait for late duplicates after that
  std::chrono::milliseconds hold{0};      // idle: how long to hold the sessions
  std::vector<pid_t> pids;                // gateways (or any processes): RSS and CPU reported
  std::string user_prefix;                // default: pb-RUN-
  bool json = false;
  enum class progress { automatic, on, off } progress_lines = progress::automatic;
  std::uint64_t duplicate_every = 0;  // floor: send every Nth frame twice
  std::uint64_t floor_ports = 2;      // floor: listening ports of the stand-in
};

/// The options of pushonce-bench (added to the common ones by run_program).
boost::program_options::options_description bench_option_description();

/// The checked options; throws usage_error (core/config.hpp) with the reason.
bench_options parse_bench_options(const boost::program_options::variables_map& vm,
                                  const std::vector<std::string>& positional);

}  // namespace pushonce::bench
