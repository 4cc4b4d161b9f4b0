#pragma once
// `pushonce-leader run`: holds (or waits for) the leader lease (leader/lease_state decides)
// and, while it holds it, its three duties act under the fencing token: leader/assigner
// (assigns free resources as soon as a queue changes, and expires assignments),
// leader/opener (scheduled openings) and leader/presence_keeper (abandonment, dead
// gateways). The daemon runs the lease loop and hands the duties its wake messages.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/queue_api.hpp"
#include "core/redis/subscriber.hpp"
#include "leader/assigner.hpp"
#include "leader/daemon_options.hpp"
#include "leader/duty_context.hpp"
#include "leader/lease_state.hpp"
#include "leader/opener.hpp"
#include "leader/presence_keeper.hpp"
#include "leader/queue_list_check.hpp"

namespace pushonce::leader {

class leader_daemon {
 public:
  leader_daemon(boost::asio::any_io_executor ex, redis::connection_options redis, keys k,
                daemon_options opts);

  void start();
  /// Stops assigning and releases the lease at once so a standby takes over.
  boost::asio::awaitable<void> stop();

  bool leading() const { return lease_.leading(); }
  /// The leader's /metrics (--metrics-listen): its own figures always; the system-wide
  /// ones (NS:stats, live workers and gateways, dead letters) only while it holds the
  /// lease, so that they are exported once per namespace.
  boost::asio::awaitable<std::string> metrics_text();
  /// Called (once) when another leader registered a queue this one's --queue list lacks:
  /// after a failover to this leader that queue would stall. The program stops (exit 2).
  void on_queue_conflict(std::function<void(const std::string&)> fn) {
    queue_check_.on_conflict(std::move(fn));
  }
  unsigned long long assigned() const { return assigner_.assigned(); }

 private:
  boost::asio::awaitable<void> lease_loop();
  boost::asio::awaitable<lease_reply> call_lease(lease_call mode);
  void on_wake(const std::string& channel, const std::string& payload);
  void apply(lease_action action);
  boost::asio::awaitable<void> fenced(const std::string& queue, std::string_view why);
  /// What the duties share: this daemon's connection, keys, settings and lease.
  duty_context duties();

  boost::asio::any_io_executor ex_;
  keys keys_;
  daemon_options opts_;
  std::shared_ptr<redis::connection> conn_;
  std::shared_ptr<redis::subscriber> sub_;
  queue_api queues_;
  boost::asio::steady_timer lease_timer_;
  lease_state lease_;
  bool stopping_ = false;
  bool registered_ = false;  // opts_.queues are marked registered in Redis
  assigner assigner_;
  opener opener_;
  presence_keeper presence_;
  queue_list_check queue_check_;
};

}  // namespace pushonce::leader
