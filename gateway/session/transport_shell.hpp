#pragma once
// The part of a session's transport that the WebSocket and the SSE shells share: the
// session_handle entry points (posted to the session's strand), the send queue with its
// slow-consumer bound, the one close (a code and a reason, then the close deadline), the
// wait for room, and the write chain's bookkeeping once a write completes (frames counted,
// the next batch, the close after the batch in flight). What goes on the wire is the
// transport's own: `Transport` derives from transport_shell<Transport> and provides
//
//   static constexpr std::string_view log_name;  // "ws", "sse": the log lines' prefix
//   bool can_write() const;     // the stream is open for frames (SSE: its header is written)
//   void do_write();            // takes queue_.take_batch() and writes it; then on_write(ec)
//   void do_close();            // writes the close (frame or event) and ends the stream
//   void write_failed();        // after a failed write (queue aborted): let go of the socket
//   void drop_connection();     // the close deadline passed: shut the socket down
//   static bool quiet_write_error(const boost::system::error_code&);  // not worth a log line
//
// The calls into the transport are static (no virtual call per frame); the decisions that
// are not I/O are send_queue's and session_queue_limits / bounded_close_reason below.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/log.hpp"
#include "core/use_tuple.hpp"
#include "gateway/limits/connection_info.hpp"
#include "gateway/protocol/session_handle.hpp"
#include "gateway/session/send_queue.hpp"
#include "gateway/session/session_flow.hpp"
#include "gateway/session/session_transport.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

/// The send queue's bounds for a session: the settings' frames and bytes, low water at a
/// quarter of each.
send_queue::limits session_queue_limits(const gateway_settings& s);

/// The close reason as sent: at most max_close_reason bytes (a WebSocket close frame holds
/// 123).
inline constexpr std::size_t max_close_reason = 120;
std::string_view bounded_close_reason(std::string_view reason);

/// The close code of a session whose send queue is over its bounds.
inline constexpr std::uint16_t slow_consumer_close_code = 1013;

template <class Transport>
class transport_shell : public session_handle,
                        public session_transport,
                        public std::enable_shared_from_this<Transport> {
 public:
  // session_handle: thread-safe entry points.
  void deliver(frame_ptr frame) final {
    boost::asio::post(timer_.get_executor(), [self = this->shared_from_this(),
                                              f = std::move(frame)] { self->flow_.on_live(f); });
  }
  void request_catch_up() final {
    boost::asio::post(timer_.get_executor(),
                      [self = this->shared_from_this()] { self->flow_.request_catch_up(); });
  }
  void shutdown(std::uint16_t code, std::string reason) final {
    boost::asio::post(timer_.get_executor(), [self = this->shared_from_this(), code,
                                              r = std::move(reason)] { self->close(code, r); });
  }

  // session_transport: on the strand.
  void send(frame_ptr f) final {
    switch (queue_.push(std::move(f))) {
      case send_queue::push_result::accepted:
        if (wire().can_write() && !queue_.writing()) wire().do_write();
        break;
      case send_queue::push_result::dropped:
        break;
      case send_queue::push_result::over_limit:
        log::warn(log::fields{{"user", flow_.user()}},
                  "{}: {}: send queue full ({} frames, {} bytes): closing 1013",
                  Transport::log_name, flow_.user(), queue_.frames(), queue_.bytes());
        ++state_->metrics.slow_consumer_closes;
        close(slow_consumer_close_code, "slow consumer");
        break;
    }
  }

  boost::asio::awaitable<void> wait_room() final {
    while (!flow_.machine().closing() && !queue_.has_room()) {
      timer_.expires_at(boost::asio::steady_timer::time_point::max());
      co_await timer_.async_wait(use_tuple);
    }
  }

  void close(std::uint16_t code, std::string_view reason) final {
    if (!flow_.machine().close()) return;
    close_code_ = code;
    close_reason_ = bounded_close_reason(reason);
    arm_close_deadline();
    if (queue_.close() && wire().can_write()) wire().do_close();
  }

  boost::asio::any_io_executor executor() final { return timer_.get_executor(); }
  std::shared_ptr<session_handle> self() final { return this->shared_from_this(); }

 protected:
  // `ex` is the socket's executor (the session's strand).
  transport_shell(const boost::asio::any_io_executor& ex, std::shared_ptr<gateway_state> state,
                  connection_info info)
      : state_(std::move(state)),
        info_(std::move(info)),
        timer_(ex),
        queue_(session_queue_limits(state_->settings)),
        flow_(session_services_of(*state_), *this, Transport::log_name) {}

  ~transport_shell() override { state_->registry.detach(this); }

  // A closing session whose peer does not read (the write in flight or the close never
  // completes) is dropped after close_timeout: the socket is shut down, the pending
  // operations end, the session is destroyed. The timer (the hello/room timer, free from
  // here on) holds no reference: a session that ends sooner is not kept for the deadline.
  void arm_close_deadline() {
    close_deadline_armed_ = true;
    timer_.expires_after(state_->settings.close_timeout);  // cancels the hello / room wait
    timer_.async_wait([weak = this->weak_from_this()](std::error_code ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      ++self->state_->metrics.close_deadline_drops;
      log::debug("{}: {} ({}): close not done within {} ms: dropped", Transport::log_name,
                 self->flow_.user(), self->info_.client,
                 self->state_->settings.close_timeout.count());
      self->drop_connection();
    });
  }

  // The connection ended (read side, or the SSE stream's end): closing from here on, the
  // frames not in flight are dropped. The close deadline stays: a write may be stuck.
  void end_flow() {
    if (!close_deadline_armed_) timer_.cancel();
    flow_.end(this);
    queue_.drop();
  }

  // The write of the batch in flight completed.
  void on_write(const boost::system::error_code& ec) {
    if (ec) {
      if (!Transport::quiet_write_error(ec))
        log::debug("{}: {}: write: {}", Transport::log_name, flow_.user(), ec.message());
      flow_.machine().close();
      queue_.abort();
      wire().write_failed();
      return;
    }
    state_->metrics.frames_sent += queue_.in_flight();
    auto next = queue_.on_written();
    if (queue_.has_room() && flow_.machine().catching_up()) timer_.cancel();  // wait_room
    switch (next) {
      case send_queue::after_write::write_more:
        wire().do_write();
        break;
      case send_queue::after_write::close:
        wire().do_close();
        break;
      case send_queue::after_write::idle:
        break;
    }
  }

  std::shared_ptr<gateway_state> state_;
  connection_info info_;             // the client's address and its counted slots
  boost::asio::steady_timer timer_;  // the hello deadline (WebSocket), the replay's wait for
                                     // room, then the close deadline
  send_queue queue_;
  session_flow flow_;
  std::string close_reason_;
  std::uint16_t close_code_ = 1000;
  bool close_deadline_armed_ = false;

 private:
  Transport& wire() { return static_cast<Transport&>(*this); }
};

}  // namespace pushonce::gateway
