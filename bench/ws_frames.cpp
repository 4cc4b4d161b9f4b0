#include "bench/ws_frames.hpp"

namespace pushonce::bench {

ws_frame_decoder::status ws_frame_decoder::next(frame& out) {
  for (;;) {
    // Drop what was consumed: all of it (the usual case: nothing left over), or once it is
    // most of the buffer (amortised).
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    } else if (pos_ > 0 && pos_ * 2 >= buf_.size()) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    const std::size_t avail = buf_.size() - pos_;
    if (avail < 2) return status::need_more;
    const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
    const bool fin = (p[0] & 0x80) != 0;
    const auto op = static_cast<opcode>(p[0] & 0x0f);
    const bool masked = (p[1] & 0x80) != 0;
    std::uint64_t len = p[1] & 0x7f;
    std::size_t head = 2;
    if ((p[0] & 0x70) != 0) {
      error_ = "reserved bits set (no extension was negotiated)";
      return status::error;
    }
    if (len == 126) {
      if (avail < 4) return status::need_more;
      len = (std::uint64_t{p[2]} << 8) | p[3];
      head = 4;
    } else if (len == 127) {
      if (avail < 10) return status::need_more;
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | p[2 + i];
      head = 10;
    }
    if (len > max_message) {
      error_ = "frame too large";
      return status::error;
    }
    std::uint8_t key[4] = {0, 0, 0, 0};
    if (masked) {
      if (avail < head + 4) return status::need_more;
      for (int i = 0; i < 4; ++i) key[i] = p[head + i];
      head += 4;
    }
    if (avail < head + len) return status::need_more;
    char* payload = buf_.data() + pos_ + head;
    if (masked)
      for (std::uint64_t i = 0; i < len; ++i)
        payload[i] = static_cast<char>(payload[i] ^ key[i % 4]);
    pos_ += head + static_cast<std::size_t>(len);
    const std::string_view data(payload, static_cast<std::size_t>(len));
    const bool control = (static_cast<std::uint8_t>(op) & 0x8) != 0;
    if (control) {
      if (!fin || len > 125) {
        error_ = "bad control frame";
        return status::error;
      }
      out = {op, data};
      return status::frame;
    }
    if (op == opcode::continuation) {
      if (!in_message_) {
        error_ = "continuation without a message";
        return status::error;
      }
      message_.append(data);
      if (message_.size() > max_message) {
        error_ = "message too large";
        return status::error;
      }
      if (!fin) continue;
      in_message_ = false;
      out = {message_op_, message_};
      return status::frame;
    }
    if (op != opcode::text && op != opcode::binary) {
      error_ = "unknown opcode";
      return status::error;
    }
    if (in_message_) {
      error_ = "a new message inside a fragmented one";
      return status::error;
    }
    if (fin) {
      out = {op, data};
      return status::frame;
    }
    in_message_ = true;
    message_op_ = op;
    message_.assign(data);
  }
}

std::string encode_client_frame(ws_frame_decoder::opcode op, std::string_view payload,
                                std::uint32_t mask) {
  std::string out;
  out.reserve(payload.size() + 14);
  out.push_back(static_cast<char>(0x80 | static_cast<std::uint8_t>(op)));
  const auto n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xffff) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xff));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int i = 7; i >= 0; --i)
      out.push_back(static_cast<char>((std::uint64_t{n} >> (8 * i)) & 0xff));
  }
  const unsigned char key[4] = {
      static_cast<unsigned char>(mask >> 24), static_cast<unsigned char>(mask >> 16),
      static_cast<unsigned char>(mask >> 8), static_cast<unsigned char>(mask)};
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(key[i]));
  for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<char>(payload[i] ^ key[i % 4]));
  return out;
}

}  // namespace pushonce::bench
