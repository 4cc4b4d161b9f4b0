#include "gateway/session/send_queue.hpp"

#include <algorithm>

namespace pushonce::gateway {

send_queue::push_result send_queue::push(frame_ptr f) {
  if (closing_) return push_result::dropped;
  if (frames() >= limits_.max_frames || bytes_ + f->size() > limits_.max_bytes)
    return push_result::over_limit;
  bytes_ += f->size();
  q_.push_back(std::move(f));
  return push_result::accepted;
}

std::span<const send_queue::frame_ptr> send_queue::take_batch(std::size_t max) {
  if (in_flight_ > 0 || closing_) return {};
  in_flight_ = std::min({frames(), max, std::max<std::size_t>(limits_.max_batch, 1)});
  return {q_.data() + head_, in_flight_};
}

send_queue::after_write send_queue::on_written() {
  for (std::size_t i = 0; i < in_flight_; ++i) {
    bytes_ -= q_[head_]->size();
    q_[head_++].reset();
  }
  in_flight_ = 0;
  compact();
  if (close_after_write_) {
    close_after_write_ = false;
    return after_write::close;
  }
  if (closing_ || frames() == 0) return after_write::idle;
  return after_write::write_more;
}

bool send_queue::close() {
  if (closing_) return false;
  closing_ = true;
  drop_unsent();
  if (in_flight_ > 0) {
    close_after_write_ = true;
    return false;
  }
  return true;
}

void send_queue::drop() {
  closing_ = true;
  close_after_write_ = false;
  drop_unsent();
}

void send_queue::abort() {
  closing_ = true;
  close_after_write_ = false;
  in_flight_ = 0;
  q_.clear();
  q_.shrink_to_fit();
  head_ = 0;
  bytes_ = 0;
}

void send_queue::drop_unsent() {
  while (q_.size() > head_ + in_flight_) {
    bytes_ -= q_.back()->size();
    q_.pop_back();
  }
  compact();
}

// Keeps the vector from growing at the front; an empty queue gives its memory back so an
// idle session holds none.
void send_queue::compact() {
  if (head_ == q_.size()) {
    q_.clear();
    head_ = 0;
    if (q_.capacity() > 0 && in_flight_ == 0) q_.shrink_to_fit();
  } else if (in_flight_ == 0 && head_ >= 64 && head_ * 2 >= q_.size()) {
    q_.erase(q_.begin(), q_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

}  // namespace pushonce::gateway
