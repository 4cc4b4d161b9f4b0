#pragma once
// What the registry knows of a session (WebSocket or SSE): no Beast here. Every method is
// thread-safe: it posts to the session's strand (transport_shell implements them for both
// transports).

#include <cstdint>
#include <memory>
#include <string>

namespace pushonce::gateway {

class session_handle {
 public:
  virtual ~session_handle() = default;
  /// A frame of the user's channel, shared by every session of the user.
  virtual void deliver(std::shared_ptr<const std::string> frame) = 0;
  /// Re-read the inbox after the last offset sent (messages published while the
  /// subscriber was disconnected).
  virtual void request_catch_up() = 0;
  /// Close with a WebSocket close code (1001 on shutdown).
  virtual void shutdown(std::uint16_t code, std::string reason) = 0;
};

}  // namespace pushonce::gateway
