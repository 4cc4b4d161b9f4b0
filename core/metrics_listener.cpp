#include "core/metrics_listener.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstdlib>

#include "core/config.hpp"
#include "core/log.hpp"
#include "core/use_tuple.hpp"

namespace pushonce {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

metrics_answer metrics_route(std::string_view head) {
  auto line = head.substr(0, head.find("\r\n"));
  auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return {400, false, "bad request\n"};
  auto method = line.substr(0, sp1);
  auto rest = line.substr(sp1 + 1);
  auto target = rest.substr(0, rest.find(' '));
  target = target.substr(0, target.find('?'));
  if (method != "GET" && method != "HEAD") return {405, false, "only GET\n"};
  if (target == "/metrics") return {200, true, {}};
  if (target == "/healthz") return {200, false, "ok\n"};
  return {404, false, "not found: GET /metrics or /healthz\n"};
}

listen_address parse_listen_address(std::string_view text, std::string_view option) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    throw usage_error(fmt::format("{}: expected HOST:PORT or :PORT, not '{}'", option, text));
  listen_address a;
  a.host = std::string(text.substr(0, colon));
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']')
    a.host = a.host.substr(1, a.host.size() - 2);
  if (a.host.empty()) a.host = "0.0.0.0";
  auto port = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535)
    throw usage_error(
        fmt::format("{}: port '{}' is not a number from 0 to 65535 (in '{}')", option, port, text));
  boost::system::error_code aec;
  asio::ip::make_address(a.host, aec);
  if (aec)
    throw usage_error(fmt::format("{}: '{}' is not an IP address (in '{}')", option, a.host, text));
  a.port = static_cast<std::uint16_t>(value);
  return a;
}

std::optional<listen_address> metrics_listen_option(const std::optional<std::string>& flag) {
  if (flag) return parse_listen_address(*flag, "--metrics-listen");
  if (const char* env = std::getenv("PUSHONCE_METRICS_LISTEN"); env && *env)
    return parse_listen_address(env, "PUSHONCE_METRICS_LISTEN");
  return std::nullopt;
}

struct metrics_listener::state : std::enable_shared_from_this<state> {
  state(asio::any_io_executor ex, const listen_address& where, render_fn r)
      : acceptor(ex), render(std::move(r)) {
    tcp::endpoint ep(asio::ip::make_address(where.host), where.port);
    acceptor.open(ep.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(ep);
    acceptor.listen();
  }
  tcp::acceptor acceptor;
  render_fn render;
  bool stopped = false;

  asio::awaitable<void> accept_loop(std::shared_ptr<state> self) {
    while (!stopped) {
      auto [ec, sock] = co_await acceptor.async_accept(use_tuple);
      if (stopped) break;
      if (ec) {
        log::warn("metrics listener: accept: {}", ec.message());
        asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(100));
        co_await pause.async_wait(use_tuple);
        continue;
      }
      asio::co_spawn(acceptor.get_executor(), serve(self, std::move(sock)), asio::detached);
    }
  }

  asio::awaitable<void> read_head(tcp::socket& sock, std::string& head) {
    char buf[2048];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
      auto [ec, n] = co_await sock.async_read_some(asio::buffer(buf), use_tuple);
      if (ec) co_return;
      head.append(buf, n);
    }
  }

  asio::awaitable<void> serve(std::shared_ptr<state> self, tcp::socket sock) {
    std::string head;
    asio::steady_timer deadline(sock.get_executor(), std::chrono::seconds(5));
    auto outcome = co_await (read_head(sock, head) || deadline.async_wait(use_tuple));
    if (outcome.index() == 1 || head.find("\r\n\r\n") == std::string::npos) co_return;
    auto answer = metrics_route(head);
    std::string body = answer.body;
    const char* type = "text/plain; charset=utf-8";
    if (answer.metrics) {
      body = co_await self->render();
      type = "text/plain; version=0.0.4; charset=utf-8";
    }
    const char* reason = answer.status == 200   ? "OK"
                         : answer.status == 404 ? "Not Found"
                         : answer.status == 405 ? "Method Not Allowed"
                                                : "Bad Request";
    std::string out = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: "
        "close\r\n\r\n",
        answer.status, reason, type, body.size());
    if (head.rfind("HEAD ", 0) != 0) out += body;
    co_await asio::async_write(sock, asio::buffer(out), use_tuple);
    boost::system::error_code ignored;
    sock.shutdown(tcp::socket::shutdown_both, ignored);
  }
};

metrics_listener::metrics_listener(asio::any_io_executor ex, const listen_address& where,
                                   render_fn render)
    : state_(std::make_shared<state>(std::move(ex), where, std::move(render))) {}

metrics_listener::~metrics_listener() {
  stop();
}

std::uint16_t metrics_listener::port() const {
  return state_->acceptor.local_endpoint().port();
}

void metrics_listener::start() {
  asio::co_spawn(state_->acceptor.get_executor(), state_->accept_loop(state_), asio::detached);
}

void metrics_listener::stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
}

}  // namespace pushonce
