// The SSE wire of a session: the text/event-stream response, a batch of queued frames
// rendered as events by sse_framing in one write, the keep-alive comments, the close event
// (the send queue, the close bookkeeping and the write chain's accounting are
// transport_shell's); and POST /sse/op, which runs an op on the session's strand through
// the same session_flow and answers the reply frame. What frames mean is session_flow's.
//
// The response is HTTP/1.1 without Content-Length and with Connection: close: the body is
// the stream, it ends when the connection does (no chunked framing to write).
#include "gateway/session/sse_session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <vector>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/use_tuple.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/auth/revocations.hpp"
#include "gateway/protocol/http_response.hpp"
#include "gateway/session/op_turns.hpp"
#include "gateway/session/sse_framing.hpp"
#include "gateway/session/transport_shell.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto sse_keepalive_every = std::chrono::seconds(20);  // under the 25 s of the contract
constexpr std::string_view sse_stream_head =
    "HTTP/1.1 200 OK\r\n"
    "Server: pushonce-gateway\r\n"
    "Content-Type: text/event-stream\r\n"
    "Cache-Control: no-store\r\n"
    "X-Accel-Buffering: no\r\n"
    "Connection: close\r\n"
    "\r\n"
    "retry: 1000\n\n";

// The keep-alive comment as a queued frame: recognised by its address.
const std::shared_ptr<const std::string>& sse_keepalive_frame() {
  static const auto f = std::make_shared<const std::string>(sse_keepalive);
  return f;
}

struct sse_op_answer {
  unsigned status = 404;
  std::string body;
};

class sse_session;

// The transport an op of POST /sse/op answers through: its first frame is the HTTP answer;
// everything else is the session's.
class sse_reply_capture final : public session_transport {
 public:
  explicit sse_reply_capture(session_transport& session) : session_(session) {}
  void send(frame_ptr frame) override {
    if (!reply_)
      reply_ = std::move(frame);
    else
      session_.send(std::move(frame));
  }
  asio::awaitable<void> wait_room() override { return session_.wait_room(); }
  void close(std::uint16_t code, std::string_view reason) override { session_.close(code, reason); }
  asio::any_io_executor executor() override { return session_.executor(); }
  std::shared_ptr<session_handle> self() override { return session_.self(); }
  const frame_ptr& reply() const { return reply_; }

 private:
  session_transport& session_;
  frame_ptr reply_;
};

class sse_session final : public transport_shell<sse_session> {
 public:
  static constexpr std::string_view log_name = "sse";

  sse_session(tcp::socket&& socket, std::shared_ptr<gateway_state> state, connection_info info)
      : transport_shell(socket.get_executor(), std::move(state), std::move(info)),
        sock_(std::move(socket)),
        keepalive_(sock_.get_executor()) {}

  ~sse_session() override {
    if (!id_.empty()) state_->registry.unname(id_);
  }

  void start(http::request<http::string_body> req) {
    auto q = parse_sse_query(req.target(), req["Last-Event-ID"]);
    const unsigned version = req.version();
    std::optional<http_response> refused;
    if (!q.error.empty()) {
      refused = error_response(errc::bad_request, q.error, version);
    } else if (auto who = state_->auth->authenticate(q.hello); !who) {
      ++state_->metrics.auth_failures;
      refused = error_response(errc::unauthorized, who.error().message, version);
    } else if (state_->revoked_users->revoked(who.value())) {
      ++state_->metrics.auth_failures;
      refused = error_response(errc::unauthorized, "revoked", version);
    }
    if (refused) {
      asio::co_spawn(
          sock_.get_executor(),
          [self = shared_from_this(), res = std::move(*refused)]() mutable {
            return self->refuse(std::move(res));
          },
          exit_on_exception("sse refusal"));
      return;
    }
    state_->registry.attach(shared_from_this());
    asio::co_spawn(
        sock_.get_executor(),
        [self = shared_from_this(), hello = sse_hello_frame(q.hello)]() mutable {
          return self->run(std::move(hello));
        },
        exit_on_exception("sse session"));
  }

  void on_welcome(std::string_view session, std::string_view epoch) override {
    id_ = session;
    epoch_ = epoch;
    state_->registry.name(id_, shared_from_this());
  }

  /// POST /sse/op: runs `frame` on the strand, for `user` (who must be the session's).
  asio::awaitable<sse_op_answer> run_op(std::string user, std::string frame) {
    // Named locals, not temporaries in the co_await operand (GCC 12 destroys those twice).
    auto on_strand = [self = shared_from_this(), user = std::move(user),
                      frame = std::move(frame)]() mutable -> asio::awaitable<sse_op_answer> {
      return self->run_op_here(std::move(user), std::move(frame));
    };
    auto task = asio::co_spawn(sock_.get_executor(), std::move(on_strand), asio::use_awaitable);
    sse_op_answer a = co_await std::move(task);
    co_return a;
  }

 private:
  friend class transport_shell<sse_session>;

  // ---- what transport_shell asks of the wire
  bool can_write() const { return streaming_; }
  static bool quiet_write_error(const beast::error_code& ec) {
    return ec == asio::error::operation_aborted;
  }
  void write_failed() { end(); }
  void drop_connection() {
    beast::error_code ignored;
    sock_.shutdown(tcp::socket::shutdown_both, ignored);
    sock_.close(ignored);
  }

  asio::awaitable<sse_op_answer> run_op_here(std::string user, std::string frame) {
    sse_op_answer a;
    if (flow_.machine().closing() || user != flow_.user()) co_return a;
    // One op at a time, in arrival order, as a WebSocket session reads its frames: a waiting
    // op sleeps on a timer of its own until the op before it hands over the turn.
    auto turn = std::make_shared<asio::steady_timer>(sock_.get_executor(),
                                                     asio::steady_timer::time_point::max());
    if (!turns_.arrive(turn)) {
      co_await turn->async_wait(use_tuple);
      if (flow_.machine().closing()) {
        pass_turn();
        co_return a;
      }
    }
    sse_reply_capture out(*this);
    co_await flow_.on_frame(std::move(frame), true, out);
    pass_turn();
    if (out.reply()) {
      a.status = 200;
      a.body = *out.reply();
    } else {
      a.status = 204;
    }
    co_return a;
  }

  void pass_turn() {
    if (auto next = turns_.finish()) (*next)->cancel();
  }

  asio::awaitable<void> refuse(http_response res) {
    res.keep_alive(false);
    res.prepare_payload();
    co_await http::async_write(sock_, res, use_tuple);
    beast::error_code ec;
    sock_.shutdown(tcp::socket::shutdown_send, ec);
    sock_.close(ec);
  }

  asio::awaitable<void> run(std::string hello) {
    auto [wec, wn] = co_await asio::async_write(sock_, asio::buffer(sse_stream_head), use_tuple);
    if (wec) {
      end();
      co_return;
    }
    streaming_ = true;
    do_read();
    arm_keepalive();
    if (flow_.machine().closing()) {
      if (queue_.closing() && !queue_.writing()) do_close();
      co_return;
    }
    flow_.machine().on_handshake();
    co_await flow_.on_frame(std::move(hello), true);
    if (!queue_.writing()) do_write();
  }

  // The client sends nothing on the stream: a read only tells when the connection ends.
  void do_read() {
    sock_.async_read_some(asio::buffer(rbuf_),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            if (ec) return self->end();
                            self->do_read();
                          });
  }

  void arm_keepalive() {
    keepalive_.expires_after(sse_keepalive_every);
    keepalive_.async_wait([weak = weak_from_this()](std::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->flow_.machine().closing()) return;
      self->send(sse_keepalive_frame());
      self->arm_keepalive();
    });
  }

  void end() {
    if (ended_) return;
    ended_ = true;
    keepalive_.cancel();
    for (auto& waiter : turns_.drain()) waiter->cancel();
    end_flow();
    beast::error_code ignored;
    sock_.close(ignored);
  }

  // ---- the write chain: a batch of queued frames rendered as events, one write.
  void do_write() {
    auto batch = queue_.take_batch();
    if (batch.empty()) return;
    out_.clear();
    for (const auto& f : batch) {
      if (f == sse_keepalive_frame())
        out_.append(sse_keepalive);
      else
        out_.append(render_sse_event(*f, epoch_));
    }
    asio::async_write(sock_, asio::buffer(out_),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (self->out_.capacity() > 64 * 1024) std::string().swap(self->out_);
                        self->on_write(ec);
                      });
  }

  // The close event, then the end of the stream (EventSource reconnects).
  void do_close() {
    out_ = render_sse_close(close_code_, close_reason_);
    asio::async_write(sock_, asio::buffer(out_),
                      [self = shared_from_this()](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->sock_.shutdown(tcp::socket::shutdown_send, ignored);
                        self->end();
                      });
  }

  tcp::socket sock_;
  asio::steady_timer keepalive_;
  op_turns<std::shared_ptr<asio::steady_timer>> turns_;  // the ops of POST /sse/op
  std::string id_, epoch_;
  std::string out_;  // the bytes of the write in flight
  char rbuf_[64];
  bool streaming_ = false;  // the response header is written
  bool ended_ = false;
};

}  // namespace

void start_sse_session(tcp::socket socket, http::request<http::string_body> request,
                       std::shared_ptr<gateway_state> state, connection_info info) {
  auto s = std::make_shared<sse_session>(std::move(socket), std::move(state), std::move(info));
  s->start(std::move(request));
}

asio::awaitable<http_response> sse_op_route(http_request& req, gateway_state& st) {
  const unsigned version = req.version();
  auto r = parse_sse_op(req.body());
  if (!r.error.empty()) co_return error_response(errc::bad_request, r.error, version);
  hello_op who_op;
  who_op.token = sse_bearer_token(req[http::field::authorization]);
  who_op.user = r.user ? r.user : sse_query_param(req.target(), "user");
  auto who = st.auth->authenticate(who_op);
  if (!who) {
    ++st.metrics.auth_failures;
    co_return error_response(errc::unauthorized, who.error().message, version);
  }
  if (st.revoked_users->revoked(who.value())) {
    ++st.metrics.auth_failures;
    co_return error_response(errc::unauthorized, "revoked", version);
  }
  auto s = std::dynamic_pointer_cast<sse_session>(st.registry.find(r.session));
  if (!s) co_return error_response(errc::not_found, "no such session on this gateway", version);
  std::string user = who.value().user;
  std::string frame = req.body();
  auto a = co_await s->run_op(std::move(user), std::move(frame));
  if (a.status == 404)
    co_return error_response(errc::not_found, "no such session on this gateway", version);
  if (a.status == 204) {
    http_response res{http::status::no_content, version};
    res.set(http::field::server, "pushonce-gateway");
    res.set(http::field::cache_control, "no-store");
    co_return res;
  }
  co_return json_response(200, std::move(a.body), version);
}

}  // namespace pushonce::gateway
