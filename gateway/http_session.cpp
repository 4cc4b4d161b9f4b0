#include "gateway/http_session.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <limits>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "gateway/client_address.hpp"
#include "gateway/connection_info.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/http_read_buffer.hpp"
#include "gateway/http_routes.hpp"
#include "gateway/publish_api.hpp"
#include "gateway/websocket_session.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

bool origin_allowed(const http_request& req, const gateway_settings& s) {
  if (s.allowed_origins.empty()) return true;
  auto it = req.find(http::field::origin);
  if (it == req.end()) return true;  // not a browser
  std::string_view origin = it->value();
  return std::find(s.allowed_origins.begin(), s.allowed_origins.end(), origin) !=
         s.allowed_origins.end();
}

// After an answer sent before the body was read: stop sending, read (and drop) what the
// client still sends for a moment so it sees the answer rather than a reset.
asio::awaitable<void> linger(beast::tcp_stream& stream) {
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  char sink[16 * 1024];
  std::size_t total = 0;
  stream.expires_after(std::chrono::seconds(2));
  while (total < (4u << 20)) {
    auto [rec, n] = co_await stream.async_read_some(asio::buffer(sink), use_tuple);
    if (rec) break;
    total += n;
  }
  stream.socket().close(ec);
}

// X-Forwarded-For, every such header joined with ",".
std::string forwarded_for(const http_request& req) {
  std::string out;
  auto [first, last] = req.equal_range("X-Forwarded-For");
  for (auto it = first; it != last; ++it) {
    if (!out.empty()) out += ',';
    out += it->value();
  }
  return out;
}

http_response unavailable(const http_request& req, std::string_view why) {
  auto res = json_response(503, error_json("unavailable", why), req.version());
  res.set(http::field::retry_after, "1");
  return res;
}

// The connection's slot of gateway_state::connections (docs/security.md), taken with its
// first request, when the client's address is known; an answer when the caps refuse it.
std::optional<http_response> take_connection_slot(const http_request& req, gateway_state& st,
                                                  const tcp::endpoint& peer,
                                                  connection_info& info) {
  if (info.connection) return std::nullopt;
  info.client = client_address(peer.address(), forwarded_for(req), st.settings.trusted);
  // Loopback clients (processes on this host: a load generator, a proxy that is not named
  // by --trusted-proxy) are not capped per address, only in total.
  auto r = st.connections->acquire(info.client, !is_loopback_client(info.client));
  if (r.held) {
    info.connection = std::move(r.held);
    return std::nullopt;
  }
  ++st.metrics.connections_refused;
  bool total = r.why == slot_counter::refusal::total;
  log::debug("http: {}: refused: {}", info.client,
             total ? "--max-connections" : "--max-connections-per-ip");
  return unavailable(req,
                     total ? "too many connections" : "too many connections from this address");
}

asio::awaitable<void> run_session(tcp::socket socket, std::shared_ptr<gateway_state> st) {
  boost::system::error_code pec;
  auto peer = socket.remote_endpoint(pec);
  if (pec) co_return;
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buf;
  connection_info info;
  std::size_t requests = 0;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    // No limit while the header is read (Beast checks Content-Length against the limit in
    // the middle of the fields); the route and auth answer first, then the 1 MiB limit.
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    // The wait for a request (the first one or the next on a keep-alive connection).
    stream.expires_after(st->settings.http_idle_timeout);
    auto [ec, n] = co_await http::async_read_header(stream, buf, parser, use_tuple);
    if (ec) break;  // end of stream, timeout, bad request: just close
    stream.expires_after(std::chrono::seconds(30));  // the rest of the request
    ++requests;
    auto& req = parser.get();
    auto path = target_path(req.target());

    std::optional<http_response> early = take_connection_slot(req, *st, peer, info);
    const http_route* route = nullptr;
    if (early) {
      // over a connection cap: answered 503, then closed
    } else if (beast::websocket::is_upgrade(req)) {
      if (path != "/ws") {
        early = not_found_response(req);
      } else if (st->stopping) {
        early = json_response(503, error_json("unavailable", "shutting down"), req.version());
      } else if (!origin_allowed(req, st->settings)) {
        early = json_response(403, error_json("forbidden", "origin not allowed"), req.version());
      } else if (auto r =
                     st->sessions_per_ip->acquire(info.client, !is_loopback_client(info.client));
                 !r.held) {
        ++st->metrics.connections_refused;
        log::debug("http: {}: upgrade refused: --max-sessions-per-ip", info.client);
        early = unavailable(req, "too many sessions from this address");
      } else {
        info.session = std::move(r.held);
        stream.expires_never();
        start_websocket_session(stream.release_socket(), parser.release(), st, std::move(info));
        co_return;
      }
    } else if (path == "/ws") {
      early = json_response(400, error_json("bad_request", "expected a WebSocket upgrade"),
                            req.version());
    } else if (!(route = find_route(req.method(), path))) {
      early = not_found_response(req);
    } else if (route->before_body) {
      early = route->before_body(req, *st);
    }
    if (!early && parser.content_length() && *parser.content_length() > max_publish_body)
      early = json_response(413, error_json("too_large", "the body is over 1 MiB"), req.version());

    bool body_read = parser.is_done();
    if (!early) {
      parser.body_limit(max_publish_body);
      if (!parser.is_done()) {  // a body still to come (a request without one is done here)
        std::optional<std::uint64_t> length;
        if (auto cl = parser.content_length()) length = *cl;
        buf.reserve(body_read_capacity(buf.size(), length, body_read_chunk));
      }
      auto [rec, rn] = co_await http::async_read(stream, buf, parser, use_tuple);
      if (rec == http::error::body_limit) {
        early =
            json_response(413, error_json("too_large", "the body is over 1 MiB"), req.version());
      } else if (rec) {
        break;
      } else {
        body_read = true;
      }
    }
    http_response res;
    ++st->metrics.http_requests;
    if (early)
      res = std::move(*early);
    else
      res = co_await route->handle(req, *st);
    // Closed after an answer to a refused connection, and after --http-max-requests.
    bool keep_alive =
        body_read && req.keep_alive() && !st->stopping && static_cast<bool>(info.connection) &&
        (st->settings.http_max_requests == 0 || requests < st->settings.http_max_requests);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    stream.expires_after(std::chrono::seconds(30));
    auto [wec, wn] = co_await http::async_write(stream, res, use_tuple);
    if (wec) break;
    if (!keep_alive) {
      if (!body_read) co_await linger(stream);
      break;
    }
    if (buf.size() == 0 && release_between_requests(buf.capacity())) buf.shrink_to_fit();
  }
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.socket().close(ec);
}

}  // namespace

void start_http_session(tcp::socket socket, std::shared_ptr<gateway_state> state) {
  auto ex = socket.get_executor();
  asio::co_spawn(
      ex,
      [s = std::move(socket), st = std::move(state)]() mutable {
        return run_session(std::move(s), std::move(st));
      },
      exit_on_exception("http session"));
}

}  // namespace pushonce::gateway
