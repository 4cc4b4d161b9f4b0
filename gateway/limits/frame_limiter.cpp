#include "gateway/limits/frame_limiter.hpp"

namespace pushonce::gateway {

frame_limiter::frame_limiter(const rate_limits& l, clock::time_point now)
    : frames_(l.frames_per_s, l.frame_burst, now),
      queue_ops_(l.queue_ops_per_s, l.queue_op_burst, now),
      strikes_(l.strikes) {}

frame_limiter::verdict frame_limiter::on_frame(bool queue_op, clock::time_point now) {
  // A queue op takes from both buckets only when both have room: a refused join does not
  // spend a frame token, and the other way round.
  bool ok = queue_op ? queue_ops_.available(now) >= 1 && frames_.available(now) >= 1
                     : frames_.available(now) >= 1;
  if (ok) {
    frames_.take(now);
    if (queue_op) queue_ops_.take(now);
    refused_ = 0;
    return verdict::pass;
  }
  ++refused_;
  return refused_ > strikes_ ? verdict::close : verdict::rate_limited;
}

}  // namespace pushonce::gateway
