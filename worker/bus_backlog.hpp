#pragma once
// The bound on the bus payloads a worker holds while every claim slot is busy: at most
// `max_messages` messages and `max_bytes` bytes of payload text. A payload over either bound
// is dropped, not queued: it is still in its outbox, and the recovery sweeper re-drives it.

#include <cstddef>

namespace pushonce::worker {

class bus_backlog {
 public:
  bus_backlog(std::size_t max_messages, std::size_t max_bytes)
      : max_messages_(max_messages), max_bytes_(max_bytes) {}

  /// True, and counted, when a payload of `messages` lines and `bytes` bytes fits under both
  /// bounds; false when it is to be dropped (nothing counted).
  bool admit(std::size_t messages, std::size_t bytes);
  /// A payload taken off the queue (to be claimed, or thrown away on shutdown).
  void release(std::size_t messages, std::size_t bytes);
  void clear();

  std::size_t messages() const { return messages_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t max_messages_, max_bytes_;
  std::size_t messages_ = 0, bytes_ = 0;
};

}  // namespace pushonce::worker
