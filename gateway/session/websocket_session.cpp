// The WebSocket wire of a session: handshake, the read loop, one WebSocket message per
// queued frame, and the close frame; the send queue, the close bookkeeping and the write
// chain's accounting are transport_shell's. What frames mean and what to send is session_flow's;
// this is the one translation unit with Beast WebSocket.
//
// Memory of an idle session (docs/benchmarks.md "Idle connections"): no coroutine frame
// (the wait for a frame is a callback; a coroutine runs only while a frame is handled), a
// read buffer of idle_read_bytes, no send buffer, no copy of the upgrade request, one
// timer, websocket::stream over a plain socket without permessage-deflate.
#include "gateway/session/websocket_session.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/use_tuple.hpp"
#include "gateway/session/transport_shell.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t idle_read_bytes = 32;  // what a read waiting for a frame holds
using upgrade_ptr = std::unique_ptr<http::request<http::string_body>>;
using ws_stream = websocket::stream<tcp::socket, /*deflateSupported=*/false>;

class websocket_session final : public transport_shell<websocket_session> {
 public:
  static constexpr std::string_view log_name = "ws";

  websocket_session(tcp::socket&& socket, std::shared_ptr<gateway_state> state,
                    connection_info info)
      : transport_shell(socket.get_executor(), std::move(state), std::move(info)),
        ws_(std::move(socket)) {}

  void start(upgrade_ptr req) {
    state_->registry.attach(shared_from_this());
    asio::co_spawn(
        ws_.get_executor(),
        [self = shared_from_this(), req = std::move(req)]() mutable {
          return self->run(std::move(req));
        },
        exit_on_exception("websocket session"));
  }

 private:
  friend class transport_shell<websocket_session>;

  // ---- what transport_shell asks of the wire
  static constexpr bool can_write() { return true; }
  static bool quiet_write_error(const beast::error_code& ec) {
    return ec == asio::error::operation_aborted || ec == websocket::error::closed;
  }
  void write_failed() {
    timer_.cancel();
    beast::error_code ignored;
    ws_.next_layer().close(ignored);
  }
  void drop_connection() {
    beast::error_code ignored;
    ws_.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
    ws_.next_layer().close(ignored);
  }

  // ---- handshake and the read chain -------------------------------------------------------
  asio::awaitable<void> run(upgrade_ptr req) {
    auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
    timeouts.handshake_timeout = std::chrono::seconds(10);
    timeouts.idle_timeout = std::chrono::seconds(60);  // a ping after 30 s of silence
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "pushonce-gateway"); }));
    ws_.read_message_max(state_->settings.max_frame);
    auto [aec] = co_await ws_.async_accept(*req, use_tuple);
    req.reset();  // the upgrade request is not kept for the session's life
    if (aec) {
      log::debug("ws: handshake failed: {}", aec.message());
      co_return;
    }
    flow_.machine().on_handshake();
    arm_hello_timer();
    do_read();
  }

  // The wait for the next frame is a plain callback, not a suspended coroutine: an idle
  // session holds the read operation and idle_read_bytes of buffer, nothing more.
  void do_read() {
    if (buf_.size() == 0) buf_.max_size(idle_read_bytes);
    ws_.async_read_some(buf_, 0, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_read(ec);
    });
  }

  void on_read(beast::error_code ec) {
    if (ec) {
      if (ec == websocket::error::message_too_big)
        log::debug("ws: {}: frame over {} bytes: closed 1009", flow_.user(),
                   state_->settings.max_frame);
      else if (ec != websocket::error::closed && ec != asio::error::operation_aborted)
        log::debug("ws: {}: read: {}", flow_.user(), ec.message());
      end();
      return;
    }
    buf_.max_size(state_->settings.max_frame + 1);
    if (!ws_.is_message_done()) return do_read();
    if (flow_.machine().phase() == session_phase::awaiting_hello) timer_.cancel();
    bool text = ws_.got_text();
    std::string frame = beast::buffers_to_string(buf_.data());
    buf_.clear();
    buf_.shrink_to_fit();  // not the capacity of the largest frame ever read
    if (flow_.machine().closing()) return do_read();
    // One frame at a time, in order: the next read starts when this one is handled.
    asio::co_spawn(
        ws_.get_executor(),
        [self = shared_from_this(), f = std::move(frame), text]() mutable -> asio::awaitable<void> {
          co_await self->flow_.on_frame(std::move(f), text);
          self->do_read();
        },
        exit_on_exception("websocket frame"));
  }

  void arm_hello_timer() {
    timer_.expires_after(state_->settings.hello_timeout);
    timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (ec || self->flow_.machine().phase() != session_phase::awaiting_hello) return;
      auto within =
          std::chrono::duration_cast<std::chrono::seconds>(self->state_->settings.hello_timeout);
      self->close(static_cast<std::uint16_t>(websocket::close_code::policy_error),
                  "hello expected within " + std::to_string(within.count()) + " s");
    });
  }

  void end() { end_flow(); }

  // ---- the write chain: a batch of queued frames, one WebSocket message per write, one
  // write in flight. Beast cannot put several messages in one write, so a batch of more than
  // one frame is written with the socket corked (TCP_CORK): the kernel sends the frames in
  // as few segments as it can, and the last write of the batch uncorks.
  void do_write() {
    auto batch = queue_.take_batch();
    if (batch.empty()) return;
    batch_pos_ = 0;
    if (batch.size() > 1) cork(true);
    write_next();
  }

  void write_next() {
    ws_.text(true);
    ws_.async_write(asio::buffer(*queue_.in_flight_at(batch_pos_)),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->on_frame_written(ec);
                    });
  }

  void on_frame_written(beast::error_code ec) {
    if (!ec && ++batch_pos_ < queue_.in_flight()) return write_next();
    if (corked_) cork(false);
    on_write(ec);
  }

  void cork(bool on) {
    int v = on ? 1 : 0;
    ::setsockopt(ws_.next_layer().native_handle(), IPPROTO_TCP, TCP_CORK, &v, sizeof v);
    corked_ = on;
  }

  void do_close() {
    websocket::close_reason cr(static_cast<websocket::close_code>(close_code_), close_reason_);
    ws_.async_close(cr, [self = shared_from_this()](beast::error_code ec) {
      if (ec && ec != asio::error::operation_aborted)
        log::debug("ws: {}: close: {}", self->flow_.user(), ec.message());
    });
  }

  ws_stream ws_;
  beast::flat_buffer buf_;       // the frame being read; empty between frames
  std::uint16_t batch_pos_ = 0;  // the frame of the batch in flight being written
  bool corked_ = false;
};

}  // namespace

void start_websocket_session(tcp::socket socket, http::request<http::string_body> upgrade,
                             std::shared_ptr<gateway_state> state, connection_info info) {
  auto s =
      std::make_shared<websocket_session>(std::move(socket), std::move(state), std::move(info));
  s->start(std::make_unique<http::request<http::string_body>>(std::move(upgrade)));
}

}  // namespace pushonce::gateway
