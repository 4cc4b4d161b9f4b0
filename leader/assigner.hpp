#pragma once
// The leader's assigner: while the lease is held, assigns free resources to waiting users
// as soon as a queue changes (a wake message from join/leave/resource scripts, handed on by
// leader/leader_daemon) and on a periodic tick as a safety net; and expires assignments
// past their accept deadline or lease (the resource goes back to the free list and is
// handed on). A queue with a rate (docs/capacity.md) is looked at again at its next due
// instant (lua/next_due.lua), not on the next tick.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/queue_api.hpp"
#include "leader/admission_assigner.hpp"
#include "leader/duty_context.hpp"

namespace pushonce::leader {

class assigner {
 public:
  assigner(duty_context ctx, queue_api& queues);

  /// Spawns the assign loop and the expire loop.
  void start();
  /// A wake message for `queue` (one of ours or not): assign there now.
  void wake(std::string_view queue);
  /// Every queue now (a new leadership, a resubscription that may have missed wakes).
  void wake_all();
  /// Ends the wait for a wake or the tick (stop).
  void interrupt() { wake_timer_.cancel(); }
  /// A step-down: the source indexes are checked again before their next use.
  void forget_sources() { sources_checked_.clear(); }
  unsigned long long assigned() const { return assigned_; }

 private:
  boost::asio::awaitable<void> assign_loop();
  boost::asio::awaitable<void> assign_queue(const std::string& queue);
  boost::asio::awaitable<void> expire_loop();
  boost::asio::awaitable<bool> ensure_source(const std::string& queue);
  /// Publishes the trace events and the published count of one batch (fire and forget).
  void record(const std::string& queue, const std::vector<assignment>& batch, const char* kind);

  duty_context ctx_;
  queue_api& queues_;  // the daemon's
  admission_assigner batches_;
  boost::asio::steady_timer wake_timer_;
  std::set<std::string> dirty_;
  std::map<std::string, long long> sources_;
  // When each queue's index was last confirmed in NS:sources (ensure_source checks it again
  // every lease length: a failover may have lost it, and another queue may take it).
  std::map<std::string, std::chrono::steady_clock::time_point> sources_checked_;
  std::map<std::string, std::chrono::steady_clock::time_point> due_;  // rated queues' next due
  unsigned long long assigned_ = 0;
};

}  // namespace pushonce::leader
