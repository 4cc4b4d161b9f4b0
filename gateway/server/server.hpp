#pragma once
// The gateway process: Redis connections, subscriber, registry, listener, heartbeat,
// signals. --threads threads (default 1) run one io_context. With one thread every handler
// runs on it in turn; with more, each connection gets a strand of its own
// (gateway/server/listener).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/config.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

struct server_options {
  common_options common;
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  unsigned threads = 1;  // docs/benchmarks.md "Idle connections" compares 1 and 2
  gateway_settings settings;
  /// --max-connections; none: the open-files limit (after raising it) minus 64.
  std::optional<std::size_t> max_connections;
  /// --jwt-jwks: a JSON Web Key Set file for tokens an identity provider signs ("": none).
  std::string jwks_path;
  /// The heartbeat found the namespace's layout is not this gateway's (none: logged).
  std::function<void(const std::string& why)> on_layout_conflict;
};

/// "HOST:PORT" or "[V6]:PORT"; throws usage_error.
std::pair<std::string, std::uint16_t> parse_listen(std::string_view text);

class server {
 public:
  explicit server(server_options opts) : opts_(std::move(opts)) {}
  /// Runs until SIGTERM/SIGINT; returns the exit code. Throws std::system_error when the
  /// listen address cannot be bound.
  int run();

 private:
  server_options opts_;
};

}  // namespace pushonce::gateway
