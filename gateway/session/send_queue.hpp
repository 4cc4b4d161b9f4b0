#pragma once
// The send queue of one session, either transport (docs/architecture.md): plain logic, no
// sockets, in the shape of uWebSockets' per-socket backpressure. The shell pushes frames,
// takes a batch of them for one write (at most one write in flight), and reports the write's
// completion; the queue answers what to do next.
//
// Invariants:
// - frames() <= max_frames and bytes() <= max_bytes (the frames in flight included): a push
//   that would pass either bound is refused with over_limit and the frame is not queued
//   (the session is then closed with 1013, docs/protocol.md "slow consumer").
// - At most one batch is in flight: take_batch() answers nothing while one is.
// - has_room(): below the low-water marks; a paced producer (the inbox replay) waits for it.
// - close(): the frames not in flight are dropped, later pushes are dropped; the close frame
//   goes out once the batch in flight is written (close() or on_written() says when).
// - An idle, empty queue holds no heap memory.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace pushonce::gateway {

class send_queue {
 public:
  using frame_ptr = std::shared_ptr<const std::string>;

  struct limits {
    std::size_t max_frames = 1024;
    std::size_t max_bytes = 4u << 20;
    std::size_t low_frames = 256;  // has_room() below both low marks
    std::size_t low_bytes = 1u << 20;
    std::size_t max_batch = 16;  // frames taken for one write
  };

  enum class push_result {
    accepted,    // queued; the shell starts a write when none is in flight
    over_limit,  // refused: the queue is at its frame or byte bound
    dropped,     // the queue is closing: discarded
  };

  enum class after_write {
    idle,        // nothing queued
    write_more,  // take_batch() has more
    close,       // a close was requested: send the close frame now
  };

  send_queue() : send_queue(limits{}) {}
  explicit send_queue(limits l) : limits_(l) {}

  push_result push(frame_ptr f);

  /// The frames of the next write, oldest first (at most `max` and limits.max_batch); empty
  /// while a write is in flight, when nothing is queued or when closing. The frames stay
  /// queued (counted) until on_written(). The span is valid until the next push().
  std::span<const frame_ptr> take_batch(std::size_t max = static_cast<std::size_t>(-1));

  /// The write in flight completed (successfully): its frames leave the queue.
  after_write on_written();

  /// Starts closing; true when the close frame may go out now (no write in flight),
  /// false when on_written() will answer `close` (or when already closing).
  bool close();

  /// The connection ended (the read side saw it close): the frames not in flight are
  /// dropped and no close frame is to be sent; on_written() answers idle.
  void drop();

  /// The write in flight failed: everything is dropped, nothing more is written.
  void abort();

  bool writing() const { return in_flight_ > 0; }
  bool closing() const { return closing_; }
  bool has_room() const { return frames() < limits_.low_frames && bytes_ < limits_.low_bytes; }
  std::size_t frames() const { return q_.size() - head_; }
  std::size_t bytes() const { return bytes_; }
  std::size_t in_flight() const { return in_flight_; }
  /// The i-th frame of the batch in flight (i < in_flight()); stable across push().
  const frame_ptr& in_flight_at(std::size_t i) const { return q_[head_ + i]; }
  const limits& bounds() const { return limits_; }

 private:
  void drop_unsent();
  void compact();

  limits limits_;
  std::vector<frame_ptr> q_;  // [head_, head_ + in_flight_) in flight, then waiting
  std::size_t head_ = 0;
  std::size_t in_flight_ = 0;
  std::size_t bytes_ = 0;
  bool closing_ = false;
  bool close_after_write_ = false;
};

}  // namespace pushonce::gateway
