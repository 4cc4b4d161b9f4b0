#include "bench/floor_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>

#include "bench/floor_logic.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::bench {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

// One WebSocket connection's send queue: frames go out in order, one write at a time.
struct ws_conn {
  explicit ws_conn(tcp::socket s) : ws(std::move(s)) {}
  websocket::stream<tcp::socket> ws;
  std::deque<std::string> queue;
  bool writing = false, closed = false;
};

}  // namespace

struct floor_server::impl : std::enable_shared_from_this<impl> {
  impl(asio::io_context& io, std::uint64_t duplicate_every) : io(io), logic(duplicate_every) {}

  asio::io_context& io;
  floor_logic logic;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::vector<std::uint16_t> ports;
  std::unordered_map<std::string, std::set<std::shared_ptr<ws_conn>>> by_user;

  void send(const std::shared_ptr<ws_conn>& c, std::string frame) {
    if (c->closed) return;
    c->queue.push_back(std::move(frame));
    if (c->writing) return;
    c->writing = true;
    asio::co_spawn(io, writer(c), asio::detached);
  }

  asio::awaitable<void> writer(std::shared_ptr<ws_conn> c) {
    while (!c->queue.empty() && !c->closed) {
      auto frame = std::move(c->queue.front());
      c->queue.pop_front();
      auto [ec, n] = co_await c->ws.async_write(asio::buffer(frame), use_tuple);
      if (ec) c->closed = true;
    }
    c->writing = false;
  }

  asio::awaitable<void> accept_loop(tcp::acceptor& a, bool publishes) {
    for (;;) {
      auto [ec, sock] = co_await a.async_accept(use_tuple);
      if (ec) co_return;
      sock.set_option(tcp::no_delay(true), ec);
      asio::co_spawn(io, connection(std::move(sock), publishes), asio::detached);
    }
  }

  asio::awaitable<void> connection(tcp::socket sock, bool publishes) {
    auto self = shared_from_this();
    beast::flat_buffer buf;
    for (;;) {
      http::request<http::string_body> req;
      auto [ec, n] = co_await http::async_read(sock, buf, req, use_tuple);
      if (ec) co_return;
      if (websocket::is_upgrade(req) && req.target() == "/ws") {
        co_await websocket_session(std::move(sock), std::move(req));
        co_return;
      }
      http::response<http::string_body> res{http::status::not_found, req.version()};
      res.set(http::field::content_type, "application/json");
      if (publishes && req.method() == http::verb::post && req.target() == "/api/publish") {
        auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
        auto out = logic.publish(req.body(), now_ms);
        for (auto& d : out.deliveries) {
          auto it = by_user.find(d.user);
          if (it == by_user.end()) continue;
          for (const auto& c : it->second) {
            send(c, d.frame);
            if (d.twice) send(c, d.frame);
          }
        }
        res.result(static_cast<http::status>(out.status));
        res.body() = std::move(out.body);
      } else if (req.target() == "/healthz") {
        res.result(http::status::ok);
        res.body() = "ok";
      } else {
        res.body() = R"({"error":"not_found","message":"no such route"})";
      }
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      auto [wec, wn] = co_await http::async_write(sock, res, use_tuple);
      if (wec || !req.keep_alive()) co_return;
    }
  }

  asio::awaitable<void> websocket_session(tcp::socket sock, http::request<http::string_body> req) {
    auto c = std::make_shared<ws_conn>(std::move(sock));
    auto [aec] = co_await c->ws.async_accept(req, use_tuple);
    if (aec) co_return;
    c->ws.text(true);
    std::string user;
    beast::flat_buffer buf;
    for (;;) {
      auto [ec, n] = co_await c->ws.async_read(buf, use_tuple);
      if (ec) break;
      boost::system::error_code pec;
      auto v = boost::json::parse(beast::buffers_to_string(buf.data()), pec);
      buf.consume(n);
      if (pec || !v.is_object()) continue;
      const auto& o = v.as_object();
      auto op = o.if_contains("op");
      if (op == nullptr || !op->is_string()) continue;
      if (op->as_string() == "hello" && user.empty() && o.contains("user") &&
          o.at("user").is_string()) {
        user = std::string(o.at("user").as_string());
        by_user[user].insert(c);
        send(c, logic.welcome(user));
      } else if (op->as_string() == "ping") {
        send(c, R"({"type":"pong"})");
      }
    }
    c->closed = true;
    if (!user.empty()) by_user[user].erase(c);
  }
};

floor_server::floor_server(asio::io_context& io, std::uint64_t ports, std::uint64_t duplicate_every)
    : impl_(std::make_shared<impl>(io, duplicate_every)) {
  for (std::uint64_t i = 0; i < ports; ++i) {
    auto a =
        std::make_unique<tcp::acceptor>(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    impl_->ports.push_back(a->local_endpoint().port());
    impl_->acceptors.push_back(std::move(a));
  }
  for (std::size_t i = 0; i < impl_->acceptors.size(); ++i)
    asio::co_spawn(io, impl_->accept_loop(*impl_->acceptors[i], i == 0), asio::detached);
}

floor_server::~floor_server() = default;

const std::vector<std::uint16_t>& floor_server::ports() const {
  return impl_->ports;
}

}  // namespace pushonce::bench
