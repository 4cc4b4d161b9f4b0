#pragma once
// WebSocket frames (RFC 6455) after the handshake, read and written without Beast's
// per-frame machinery: the session's hot path is one read of whatever the socket holds,
// then every complete frame in it handled in place. A gateway's frames to a client are
// unmasked; a client's are masked.

#include <cstdint>
#include <string>
#include <string_view>

namespace pushonce::bench {

class ws_frame_decoder {
 public:
  enum class opcode : std::uint8_t {
    continuation = 0,
    text = 1,
    binary = 2,
    close = 8,
    ping = 9,
    pong = 10
  };
  struct frame {
    opcode op;
    std::string_view payload;  // valid until the next next() or append()
  };
  enum class status { frame, need_more, error };

  /// Bytes read from the socket.
  void append(const char* data, std::size_t n) { buf_.append(data, n); }
  /// The next complete message (text/binary; fragments joined) or control frame.
  status next(frame& out);
  /// Why decoding failed (status::error).
  const std::string& error() const { return error_; }
  /// Largest message accepted.
  static constexpr std::size_t max_message = 1 << 20;

 private:
  std::string buf_;
  std::size_t pos_ = 0;  // start of the next unread frame in buf_
  std::string message_;  // fragments so far
  opcode message_op_ = opcode::text;
  bool in_message_ = false;
  std::string error_;
};

/// A masked client frame (FIN set) carrying `payload`.
std::string encode_client_frame(ws_frame_decoder::opcode op, std::string_view payload,
                                std::uint32_t mask);

}  // namespace pushonce::bench
