#pragma once
// A blocking SSE client for tests: GET /sse over a plain TCP socket, the response head, then
// the events one by one (docs/protocol.md "SSE transport").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "tests/support/ws_client.hpp"

namespace pushonce::test {

struct sse_event {
  std::string event;  // "" for a message event
  std::string id;
  std::string data;
};

class sse_client {
 public:
  sse_client() = default;
  sse_client(const sse_client&) = delete;
  sse_client& operator=(const sse_client&) = delete;
  ~sse_client();

  /// Sends GET `target` with `extra` headers; the status of the answer (0 when the
  /// connection failed). A non-200 answer's body is in error_body().
  int open(const std::string& host, std::uint16_t port, const std::string& target,
           const headers& extra = {}, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// The next event (comments skipped); nullopt at a timeout or the end of the stream.
  std::optional<sse_event> next(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// Whether the stream ended (the connection closed).
  bool ended() const { return ended_; }
  const std::string& head() const { return head_; }
  const std::string& error_body() const { return body_; }
  void close();

 private:
  bool fill(std::chrono::milliseconds timeout);

  int fd_ = -1;
  bool ended_ = false;
  std::string buf_, head_, body_;
};

}  // namespace pushonce::test
