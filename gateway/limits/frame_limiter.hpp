#pragma once
// The rate limits of one session, WebSocket or SSE (docs/security.md), without sockets: every
// client frame takes a token of the frame bucket; join and leave also take one of the
// (smaller) queue-op bucket. A frame over a bucket is not acted on: it is answered with
// error `rate_limited`. A session that sends `strikes` frames in a row that are over
// (no frame passed in between) is closed with 1008.

#include <cstdint>

#include "gateway/limits/token_bucket.hpp"
#include "gateway/state/limit_settings.hpp"

namespace pushonce::gateway {

class frame_limiter {
 public:
  using clock = token_bucket::clock;
  enum class verdict : std::uint8_t {
    pass,          // act on the frame
    rate_limited,  // answer error rate_limited, do not act on it
    close,         // close 1008
  };

  explicit frame_limiter(const rate_limits& l, clock::time_point now = clock::now());

  /// One client frame; `queue_op` when it is a join or a leave.
  verdict on_frame(bool queue_op, clock::time_point now = clock::now());
  std::uint32_t refused_in_a_row() const { return refused_; }

 private:
  token_bucket frames_;
  token_bucket queue_ops_;
  std::uint32_t strikes_;
  std::uint32_t refused_ = 0;
};

}  // namespace pushonce::gateway
