#pragma once
// A WebSocket client for e2e tests (Beast, one thread, every call with a deadline), plus a
// one-shot HTTP request helper. Beast stays in ws_client.cpp.

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce::test {

using headers = std::vector<std::pair<std::string, std::string>>;

class ws_client {
 public:
  ws_client();
  ~ws_client();
  ws_client(const ws_client&) = delete;
  ws_client& operator=(const ws_client&) = delete;

  /// TCP connect and WebSocket handshake; throws std::runtime_error on failure (the HTTP
  /// status of a refused upgrade is in the message).
  void connect(const std::string& host, std::uint16_t port, const std::string& path = "/ws",
               const headers& extra = {},
               std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Sends one text frame; false when the connection is gone.
  bool send(const std::string& text, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// The next text frame; std::nullopt on timeout or when the connection closed (see
  /// closed() / close_code()).
  std::optional<std::string> receive(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Frames until `timeout` passes without one (or the connection closes).
  std::vector<std::string> drain(std::chrono::milliseconds quiet = std::chrono::milliseconds(300));
  /// Frames until `n` have come (fewer when `limit` passes first or the connection closes),
  /// then those that follow within `quiet` (a duplicate, one too many): the expected frames
  /// are awaited as long as `limit` allows, the quiet is paid once.
  std::vector<std::string> take(std::size_t n, std::chrono::milliseconds limit,
                                std::chrono::milliseconds quiet = std::chrono::milliseconds(300));
  /// True once the server closed the connection (or it failed).
  bool closed() const;
  /// The close code the server sent (1000, 1008, ...), when it sent one.
  std::optional<int> close_code() const;
  std::string close_reason() const;
  /// Waits until the connection closes; true when it did within the timeout.
  bool wait_closed(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Client-initiated close (1000).
  void close();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

struct http_reply {
  int status = 0;  // 0: no answer
  std::string body;
  std::string error;  // transport error, if any
  headers fields;     // the response's header fields, in order

  /// The value of a header field (case-insensitive name), "" when absent.
  std::string field(std::string_view name) const {
    for (const auto& [k, v] : fields)
      if (k.size() == name.size() &&
          std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) ==
                   std::tolower(static_cast<unsigned char>(b));
          }))
        return v;
    return {};
  }
};

/// The hello frame: {"op":"hello","user":USER}, with ,"since":SINCE (raw JSON) when given.
std::string hello_frame(const std::string& user, const std::string& since = {});
/// The hello frame of a session resuming after OFFSET of EPOCH.
std::string hello_frame(const std::string& user, const std::string& epoch, long long offset);

/// "Bearer <secret>", an Authorization value. Defined out of line: GCC 12 reports a false
/// -Warray-bounds when it inlines the concatenation of two constant strings into a header list.
std::string bearer(std::string_view secret);

/// One HTTP/1.1 request on a fresh connection.
http_reply http_request(const std::string& host, std::uint16_t port, const std::string& method,
                        const std::string& target, const std::string& body = {},
                        const headers& extra = {},
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace pushonce::test
