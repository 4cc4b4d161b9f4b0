#pragma once
// The leader's and the workers' own /metrics (--metrics-listen ADDR): a tiny HTTP/1.1
// responder on Asio alone (no Beast in these programs). GET /metrics answers the text the
// program renders; GET /healthz answers "ok"; anything else 404 (405 for other methods).
// One request per connection (Connection: close), 8 KiB of request head at most, 5 s to
// send it: Prometheus' scrape, nothing more.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace pushonce {

/// What a request head asks for: the status and body to answer (socket-free).
struct metrics_answer {
  int status = 404;
  bool metrics = false;  // 200 with the rendered metrics
  std::string body;      // for the others
};
metrics_answer metrics_route(std::string_view head);

/// "HOST:PORT" (an IPv6 host in brackets) or ":PORT" (every address); throws
/// usage_error naming the option when it is not one.
struct listen_address {
  std::string host;
  std::uint16_t port = 0;
};
listen_address parse_listen_address(std::string_view text, std::string_view option);
/// --metrics-listen ADDR, else PUSHONCE_METRICS_LISTEN, else none.
std::optional<listen_address> metrics_listen_option(const std::optional<std::string>& flag);

class metrics_listener {
 public:
  using render_fn = std::function<boost::asio::awaitable<std::string>()>;
  /// Binds at once (throws std::system_error when the address is taken).
  metrics_listener(boost::asio::any_io_executor ex, const listen_address& where, render_fn render);
  ~metrics_listener();
  metrics_listener(const metrics_listener&) = delete;
  metrics_listener& operator=(const metrics_listener&) = delete;
  /// The port bound (the one asked for, or the kernel's for port 0).
  std::uint16_t port() const;
  void start();
  void stop();

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace pushonce
