#include "tests/support/ws_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <stdexcept>

namespace pushonce::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

struct ws_client::impl {
  asio::io_context ioc;
  websocket::stream<beast::tcp_stream> ws{ioc};
  beast::flat_buffer buf;
  bool read_pending = false;
  bool read_done = false;
  beast::error_code read_ec;
  bool is_closed = false;
  std::optional<int> code;
  std::string reason;

  // Runs the loop until `done` or the timeout; true when done.
  template <typename Pred>
  bool run_until(Pred done, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
      ioc.restart();
      ioc.run_one_for(deadline - now);
    }
    return true;
  }

  void start_read() {
    if (read_pending || is_closed) return;
    read_pending = true;
    read_done = false;
    ws.async_read(buf, [this](beast::error_code ec, std::size_t) {
      read_pending = false;
      read_done = true;
      read_ec = ec;
      if (ec) {
        is_closed = true;
        if (ws.reason().code != websocket::close_code::none || ec == websocket::error::closed) {
          code = static_cast<int>(ws.reason().code);
          reason = std::string(ws.reason().reason.c_str());
        }
      }
    });
  }
};

ws_client::ws_client() : impl_(std::make_unique<impl>()) {}
ws_client::~ws_client() {
  if (impl_ && !impl_->is_closed) {
    beast::error_code ec;
    beast::get_lowest_layer(impl_->ws).socket().close(ec);
  }
}

void ws_client::connect(const std::string& host, std::uint16_t port, const std::string& path,
                        const headers& extra, std::chrono::milliseconds timeout) {
  auto& d = *impl_;
  tcp::resolver resolver(d.ioc);
  auto results = resolver.resolve(host, std::to_string(port));
  beast::get_lowest_layer(d.ws).expires_after(timeout);
  bool done = false;
  beast::error_code ec;
  beast::get_lowest_layer(d.ws).async_connect(results, [&](beast::error_code e, auto) {
    ec = e;
    done = true;
  });
  d.run_until([&] { return done; }, timeout + std::chrono::seconds(1));
  if (!done || ec) throw std::runtime_error("connect failed: " + ec.message());
  beast::get_lowest_layer(d.ws).expires_never();
  d.ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
  d.ws.set_option(websocket::stream_base::decorator([extra](websocket::request_type& req) {
    for (auto& [k, v] : extra) req.set(k, v);
  }));
  d.ws.read_message_max(16u << 20);
  websocket::response_type res;
  done = false;
  d.ws.async_handshake(res, host + ":" + std::to_string(port), path, [&](beast::error_code e) {
    ec = e;
    done = true;
  });
  if (!d.run_until([&] { return done; }, timeout))
    throw std::runtime_error("websocket handshake timed out");
  if (ec)
    throw std::runtime_error("websocket handshake failed: " + ec.message() + " (HTTP " +
                             std::to_string(res.result_int()) + ")");
}

bool ws_client::send(const std::string& text, std::chrono::milliseconds timeout) {
  auto& d = *impl_;
  if (d.is_closed) return false;
  bool done = false;
  beast::error_code ec;
  d.ws.text(true);
  d.ws.async_write(asio::buffer(text), [&](beast::error_code e, std::size_t) {
    ec = e;
    done = true;
  });
  if (!d.run_until([&] { return done; }, timeout)) return false;
  return !ec;
}

std::optional<std::string> ws_client::receive(std::chrono::milliseconds timeout) {
  auto& d = *impl_;
  if (d.is_closed) return std::nullopt;
  d.start_read();
  if (!d.run_until([&] { return d.read_done; }, timeout)) return std::nullopt;
  d.read_done = false;
  if (d.read_ec) return std::nullopt;
  auto text = beast::buffers_to_string(d.buf.data());
  d.buf.consume(d.buf.size());
  return text;
}

std::vector<std::string> ws_client::drain(std::chrono::milliseconds quiet) {
  std::vector<std::string> out;
  while (auto f = receive(quiet)) out.push_back(std::move(*f));
  return out;
}

std::vector<std::string> ws_client::take(std::size_t n, std::chrono::milliseconds limit,
                                         std::chrono::milliseconds quiet) {
  std::vector<std::string> out;
  const auto until = std::chrono::steady_clock::now() + limit;
  while (out.size() < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds(0)) break;
    auto f = receive(left);
    if (!f) break;
    out.push_back(std::move(*f));
  }
  for (auto& f : drain(quiet)) out.push_back(std::move(f));
  return out;
}

bool ws_client::closed() const {
  return impl_->is_closed;
}
std::optional<int> ws_client::close_code() const {
  return impl_->code;
}
std::string ws_client::close_reason() const {
  return impl_->reason;
}

bool ws_client::wait_closed(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!impl_->is_closed) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    receive(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
  }
  return true;
}

void ws_client::close() {
  auto& d = *impl_;
  if (d.is_closed) return;
  bool done = false;
  d.ws.async_close(websocket::close_code::normal, [&](beast::error_code) { done = true; });
  d.run_until([&] { return done; }, std::chrono::seconds(2));
  d.is_closed = true;
}

std::string hello_frame(const std::string& user, const std::string& since) {
  std::string h = R"({"op":"hello","user":")" + user + "\"";
  if (!since.empty()) h += R"(,"since":)" + since;
  return h + "}";
}

std::string hello_frame(const std::string& user, const std::string& epoch, long long offset) {
  return hello_frame(user,
                     R"({"epoch":")" + epoch + R"(","offset":)" + std::to_string(offset) + "}");
}

std::string bearer(std::string_view secret) {
  std::string out = "Bearer ";
  out += secret;
  return out;
}

http_reply http_request(const std::string& host, std::uint16_t port, const std::string& method,
                        const std::string& target, const std::string& body, const headers& extra,
                        std::chrono::milliseconds timeout) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  http_reply out;
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, host + ":" + std::to_string(port));
  for (auto& [k, v] : extra) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  req.keep_alive(false);
  beast::flat_buffer buf;
  http::response<http::string_body> res;

  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(host, std::to_string(port));
  stream.expires_after(timeout);
  stream.async_connect(results, [&](beast::error_code ec, auto) {
    if (ec) {
      out.error = "connect: " + ec.message();
      return;
    }
    http::async_write(stream, req, [&](beast::error_code wec, std::size_t) {
      // A server may answer (413, 401) before reading the whole body and stop reading:
      // still read its answer.
      if (wec) out.error = "write: " + wec.message();
      http::async_read(stream, buf, res, [&](beast::error_code rec, std::size_t) {
        if (rec) {
          out.error += (out.error.empty() ? "" : "; ") + std::string("read: ") + rec.message();
          return;
        }
        out.status = res.result_int();
        out.body = res.body();
        for (const auto& f : res) out.fields.emplace_back(f.name_string(), f.value());
      });
    });
  });
  ioc.run();
  return out;
}

}  // namespace pushonce::test
