#pragma once
// What the session flows (session_flow, op_handlers) need of the transport shell that
// carries them out: send a frame, wait for room in the send queue, close, and the
// session's own executor and handle. Implemented once by transport_shell, under both
// websocket_session and sse_session; the flows never see the socket.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace pushonce::gateway {

class session_handle;

class session_transport {
 public:
  using frame_ptr = std::shared_ptr<const std::string>;

  /// Queues a frame; a session whose send queue is over its bounds is closed with 1013.
  virtual void send(frame_ptr frame) = 0;
  void send_text(std::string text) { send(std::make_shared<const std::string>(std::move(text))); }
  /// Completes when the send queue is below its low-water mark (or the session closes).
  virtual boost::asio::awaitable<void> wait_room() = 0;
  /// Closes with a WebSocket close code once the write in flight is done.
  virtual void close(std::uint16_t code, std::string_view reason) = 0;
  /// The session's strand.
  virtual boost::asio::any_io_executor executor() = 0;
  /// The session as the registry and the position notifier hold it.
  virtual std::shared_ptr<session_handle> self() = 0;
  /// hello succeeded: the welcome (of `session`, in `epoch`) is the next frame sent. The SSE
  /// shell names its session here (POST /sse/op finds it) and keeps the epoch for event ids.
  virtual void on_welcome(std::string_view session, std::string_view epoch) {
    (void)session;
    (void)epoch;
  }

 protected:
  ~session_transport() = default;
};

}  // namespace pushonce::gateway
