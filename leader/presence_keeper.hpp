#pragma once
// The leader's presence keeper (docs/data-model.md, "Presence"), every presence_tick while
// the lease is held: users absent for a queue's abandon_after leave it (abandon.lua), users
// every queue has dealt with are forgotten (presence_drop.lua), and the sessions of dead
// gateway instances are counted closed (presence_fold.lua). leader/abandon_plan decides
// what to read and whom to abandon; this only carries it out.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "leader/abandon_plan.hpp"
#include "leader/duty_context.hpp"

namespace pushonce::leader {

class presence_keeper {
 public:
  explicit presence_keeper(duty_context ctx) : ctx_(std::move(ctx)) {}

  /// Spawns the presence loop.
  void start();
  /// A step-down: the abandonment cursors are read again under the next leadership.
  void forget() { abandon_.reset(); }

 private:
  /// Every presence_tick while leading: abandon_sweep, then fold_dead_gateways.
  boost::asio::awaitable<void> presence_loop();
  boost::asio::awaitable<void> abandon_sweep();
  boost::asio::awaitable<void> abandon_queue(const std::string& queue,
                                             std::optional<std::chrono::milliseconds> after,
                                             long long now);
  boost::asio::awaitable<void> fold_dead_gateways(long long now);

  duty_context ctx_;
  abandon_plan abandon_;
  std::map<std::string, std::string> fold_cursors_;  // dead instance -> HSCAN cursor
};

}  // namespace pushonce::leader
