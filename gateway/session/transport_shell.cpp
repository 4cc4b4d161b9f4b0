#include "gateway/session/transport_shell.hpp"

namespace pushonce::gateway {

send_queue::limits session_queue_limits(const gateway_settings& s) {
  send_queue::limits l;
  l.max_frames = s.max_queue_frames;
  l.max_bytes = s.max_queue_bytes;
  l.low_frames = s.max_queue_frames / 4;
  l.low_bytes = s.max_queue_bytes / 4;
  return l;
}

std::string_view bounded_close_reason(std::string_view reason) {
  return reason.substr(0, max_close_reason);
}

}  // namespace pushonce::gateway
