#include "gateway/http/http_connection.hpp"

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
#include <chrono>
#include <limits>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/use_tuple.hpp"
#include "gateway/http/http_read_buffer.hpp"
#include "gateway/http/http_routes.hpp"
#include "gateway/http/publish_api.hpp"
#include "gateway/limits/connection_admission.hpp"
#include "gateway/limits/connection_info.hpp"
#include "gateway/session/sse_session.hpp"
#include "gateway/session/websocket_session.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

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
  auto res = error_response(errc::overloaded, why, req.version());
  res.set(http::field::retry_after, "1");
  return res;
}

// The answer to a refusal of admission (admission.hpp), counted and logged at debug.
http_response refusal(const http_request& req, const admission_verdict& v, gateway_state& st,
                      const connection_info& info) {
  if (v.status == 503) ++st.metrics.connections_refused;
  log::debug(log::fields{{"client", info.client}}, "http: refused: {}", v.log_why);
  if (v.status == 503) return unavailable(req, v.reason);
  return error_response(errc::forbidden, v.reason, req.version());  // 403
}

using request_parser = http::request_parser<http::string_body>;

void init_parser(request_parser& parser) {
  parser.header_limit(16 * 1024);
  // No limit while the header is read (Beast checks Content-Length against the limit in the
  // middle of the fields); the route and auth answer first, then the 1 MiB limit.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
}

// Waits up to --http-idle-timeout-ms for the first byte of a next request on a keep-alive
// connection (the header then has --http-header-timeout-ms, like the first request's).
asio::awaitable<bool> wait_next_request(beast::tcp_stream& stream, beast::flat_buffer& buf,
                                        std::chrono::milliseconds idle) {
  if (buf.size() > 0) co_return true;
  stream.expires_after(idle);
  auto [ec, n] = co_await stream.async_read_some(buf.prepare(kept_capacity), use_tuple);
  if (ec) co_return false;
  buf.commit(n);
  co_return true;
}

// The answer to a request that ends before its body is read: the admission of the
// request, a WebSocket upgrade, the route and its header checks. `upgraded` is set when the
// socket went to a websocket_session.
struct early_answer {
  std::optional<http_response> answer;
  const http_route* route = nullptr;
  bool upgraded = false;
  bool close = false;  // a refusal of admission: the connection ends after the answer
};

early_answer route_request(beast::tcp_stream& stream, request_parser& parser,
                           const std::shared_ptr<gateway_state>& st, const tcp::endpoint& peer,
                           connection_info& info) {
  auto& req = parser.get();
  auto path = target_path(req.target());
  if (auto v = st->admit->on_request(peer.address(), forwarded_for(req), info); !v)
    return {refusal(req, v, *st, info), nullptr, false, true};
  if (beast::websocket::is_upgrade(req)) {
    if (path != "/ws") return {not_found_response(req)};
    // Draining (SIGTERM, before the sessions are closed): new sessions go elsewhere (503;
    // nginx tries the next gateway), so the drain delay works behind a proxy that does not
    // probe /readyz.
    auto v = st->admit->on_upgrade(req[http::field::origin], req[http::field::host],
                                   st->stopping.load() || st->draining.load(), info);
    if (!v) return {refusal(req, v, *st, info), nullptr, false, true};
    stream.expires_never();
    start_websocket_session(stream.release_socket(), parser.release(), st, std::move(info));
    return {std::nullopt, nullptr, true};
  }
  if (path == "/ws")
    return {error_response(errc::bad_request, "expected a WebSocket upgrade", req.version())};
  if (path == "/sse" && req.method() == http::verb::get) {  // the SSE transport: as /ws
    if (!parser.is_done())
      return {error_response(errc::bad_request, "this request takes no body", req.version())};
    auto v = st->admit->on_upgrade(req[http::field::origin], req[http::field::host],
                                   st->stopping.load() || st->draining.load(), info);
    if (!v) return {refusal(req, v, *st, info), nullptr, false, true};
    stream.expires_never();
    start_sse_session(stream.release_socket(), parser.release(), st, std::move(info));
    return {std::nullopt, nullptr, true};
  }
  const http_route* route = find_route(req.method(), path);
  if (!route) return {not_found_response(req)};
  if (route->before_body) {
    if (auto a = route->before_body(req, *st, info.client)) return {std::move(a)};
  }
  if (parser.content_length() && *parser.content_length() > max_publish_body)
    return {error_response(errc::too_large, "the body is over 1 MiB", req.version())};
  return {std::nullopt, route};
}

// Writes `res` (no body to a HEAD request: the header says how long the GET answer is).
asio::awaitable<bool> write_answer(beast::tcp_stream& stream, http_response& res,
                                   const http_request& req, bool keep_alive) {
  res.keep_alive(keep_alive);
  res.prepare_payload();
  if (req.method() == http::verb::head) {
    auto length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
  stream.expires_after(std::chrono::seconds(30));
  auto [wec, wn] = co_await http::async_write(stream, res, use_tuple);
  co_return !wec;
}

// A connection refused at accept: its first request (if its header comes within the header
// deadline) is answered 503, then the connection is closed.
asio::awaitable<void> refuse_connection(beast::tcp_stream& stream, beast::flat_buffer& buf,
                                        const admission_verdict& v, gateway_state& st,
                                        const connection_info& info) {
  request_parser parser;
  init_parser(parser);
  stream.expires_after(st.settings.http_header_timeout);
  auto [ec, n] = co_await http::async_read_header(stream, buf, parser, use_tuple);
  if (ec) {
    if (v.status == 503) ++st.metrics.connections_refused;
    co_return;
  }
  auto res = refusal(parser.get(), v, st, info);
  if (co_await write_answer(stream, res, parser.get(), false)) co_await linger(stream);
}

asio::awaitable<void> run_session(tcp::socket socket, std::shared_ptr<gateway_state> st) {
  boost::system::error_code pec;
  auto peer = socket.remote_endpoint(pec);
  if (pec) co_return;
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buf;
  connection_info info;
  if (auto v = st->admit->on_accept(peer.address(), info); !v) {
    co_await refuse_connection(stream, buf, v, *st, info);
    co_return;
  }
  const auto& set = st->settings;
  for (std::size_t requests = 1;; ++requests) {
    // The first request's header within the header deadline from accept; a later one's
    // within the idle timeout for its first byte, then the header deadline.
    if (requests > 1 && !co_await wait_next_request(stream, buf, set.http_idle_timeout)) break;
    request_parser parser;
    init_parser(parser);
    stream.expires_after(set.http_header_timeout);
    auto [ec, n] = co_await http::async_read_header(stream, buf, parser, use_tuple);
    if (ec) break;  // end of stream, timeout, bad request: just close
    stream.expires_after(std::chrono::seconds(30));  // the rest of the request
    auto& req = parser.get();
    auto early = route_request(stream, parser, st, peer, info);
    if (early.upgraded) co_return;
    // No body on a route that takes none (GET, HEAD): answered 400 without reading it.
    if (!early.answer && !parser.is_done() && !early.route->takes_body)
      early.answer = error_response(errc::bad_request, "this request takes no body", req.version());
    bool body_read = parser.is_done();
    if (!early.answer && !body_read) {
      parser.body_limit(max_publish_body);
      std::optional<std::uint64_t> length;
      if (auto cl = parser.content_length()) length = *cl;
      buf.reserve(body_read_capacity(buf.size(), length, body_read_chunk));
      auto [rec, rn] = co_await http::async_read(stream, buf, parser, use_tuple);
      if (rec == http::error::body_limit)
        early.answer = error_response(errc::too_large, "the body is over 1 MiB", req.version());
      else if (rec)
        break;
      else
        body_read = true;
    }
    ++st->metrics.http_requests;
    http_response res;
    if (early.answer)
      res = std::move(*early.answer);
    else
      res = co_await early.route->handle(req, *st);
    // Closed after an answer before the body, after a refusal, and after --http-max-requests.
    bool keep_alive = body_read && !early.close && req.keep_alive() && !st->stopping &&
                      (set.http_max_requests == 0 || requests < set.http_max_requests);
    if (!co_await write_answer(stream, res, req, keep_alive)) break;
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
