#pragma once
// The leader's opener: while the lease is held, opens queues whose pre-queue is due
// (leader/opening_plan decides the steps; opening_draw.lua and opening_move.lua carry them
// out under the fencing token), shuffled with RAND_bytes draw keys when the queue says so.

#include <boost/asio/awaitable.hpp>
#include <string>

#include "leader/duty_context.hpp"

namespace pushonce::leader {

class opener {
 public:
  explicit opener(duty_context ctx) : ctx_(std::move(ctx)) {}

  /// Spawns the opening loop: the queues' settings every 100 ms.
  void start();

 private:
  boost::asio::awaitable<void> opening_loop();
  boost::asio::awaitable<void> open_queue(const std::string& queue, bool shuffle);

  duty_context ctx_;
};

}  // namespace pushonce::leader
