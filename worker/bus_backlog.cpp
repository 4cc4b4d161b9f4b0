#include "worker/bus_backlog.hpp"

#include <algorithm>

namespace pushonce::worker {

bool bus_backlog::admit(std::size_t messages, std::size_t bytes) {
  if (messages > max_messages_ - std::min(messages_, max_messages_)) return false;
  if (bytes > max_bytes_ - std::min(bytes_, max_bytes_)) return false;
  messages_ += messages;
  bytes_ += bytes;
  return true;
}

void bus_backlog::release(std::size_t messages, std::size_t bytes) {
  messages_ -= std::min(messages, messages_);
  bytes_ -= std::min(bytes, bytes_);
}

void bus_backlog::clear() {
  messages_ = 0;
  bytes_ = 0;
}

}  // namespace pushonce::worker
