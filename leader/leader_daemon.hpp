#pragma once
// `pushonce-leader run`: holds (or waits for) the leader lease and, while it holds it,
// assigns free resources to waiting users as soon as a queue changes (a wake message from
// join/leave/resource scripts) and on a periodic tick as a safety net.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/admission_token.hpp"
#include "core/keys.hpp"
#include "core/queue_api.hpp"
#include "core/redis/subscriber.hpp"
#include "leader/abandon_plan.hpp"
#include "leader/lease_state.hpp"

namespace pushonce::leader {

struct daemon_options {
  std::string id;
  std::vector<std::string> queues{"default"};
  std::chrono::milliseconds lease{5000};
  std::chrono::milliseconds accept_timeout{0};  // 0: assignments do not expire
  std::chrono::milliseconds tick{1000};
  long long batch = 200;           // assignments (expiries) per script call: one bus message each
  long long opening_batch = 1000;  // pre-queued users drawn or moved per script call
  std::chrono::milliseconds presence_tick{1000};  // the abandonment sweep and gateway folding
  std::chrono::milliseconds gateway_grace{5000};  // a new instance's time to beat first
  pushonce::retention retention;
  // Admission tokens (leader/leader_admission.cpp): none = `data.admission` is null.
  std::shared_ptr<const admission::signer> admission_signer;
  std::string admission_issuer = "pushonce";
  std::chrono::seconds admission_ttl{600};
};

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
    on_queue_conflict_ = std::move(fn);
  }
  unsigned long long assigned() const { return assigned_; }

 private:
  boost::asio::awaitable<void> lease_loop();
  boost::asio::awaitable<void> assign_loop();
  boost::asio::awaitable<lease_reply> call_lease(lease_call mode);
  boost::asio::awaitable<void> assign_queue(const std::string& queue);
  /// One assign.lua batch; with an admission signer: plan, sign, assign (leader_admission.cpp).
  boost::asio::awaitable<outcome<std::vector<assignment>>> assign_signed(const std::string& queue,
                                                                         long long source);
  /// The tokens of a plan's pairs, signed on signing_ (one thread: the signer is used by one
  /// thread at a time) while this thread goes on with Redis.
  boost::asio::awaitable<std::vector<std::string>> sign_plan(const std::string& queue,
                                                             long long source,
                                                             admission::assign_plan plan);
  boost::asio::awaitable<void> expire_loop();
  /// Opens queues whose pre-queue is due (leader/opening_plan), under the fencing token.
  boost::asio::awaitable<void> opening_loop();
  boost::asio::awaitable<void> open_queue(const std::string& queue, bool shuffle);
  boost::asio::awaitable<bool> ensure_source(const std::string& queue);
  /// Every presence_tick while leading: abandon_sweep, then fold_dead_gateways.
  boost::asio::awaitable<void> presence_loop();
  boost::asio::awaitable<void> abandon_sweep();
  boost::asio::awaitable<void> abandon_queue(const std::string& queue,
                                             std::optional<std::chrono::milliseconds> after,
                                             long long now);
  boost::asio::awaitable<void> fold_dead_gateways(long long now);
  boost::asio::awaitable<void> check_queue_list();
  void on_wake(const std::string& channel, const std::string& payload);
  /// Publishes the trace events and the published count of one batch (fire and forget).
  void record(const std::string& queue, const std::vector<assignment>& batch, const char* kind);
  void apply(lease_action action);
  boost::asio::awaitable<void> fenced(const std::string& queue, std::string_view why);

  boost::asio::any_io_executor ex_;
  keys keys_;
  daemon_options opts_;
  std::shared_ptr<redis::connection> conn_;
  std::shared_ptr<redis::subscriber> sub_;
  queue_api queues_;
  boost::asio::steady_timer wake_timer_, lease_timer_;
  std::set<std::string> dirty_;
  std::map<std::string, long long> sources_;
  lease_state lease_;
  abandon_plan abandon_;
  std::map<std::string, std::string> fold_cursors_;  // dead instance -> HSCAN cursor
  bool stopping_ = false;
  bool registered_ = false;  // opts_.queues are marked registered in Redis
  unsigned long long assigned_ = 0;
  boost::asio::thread_pool signing_{1};  // admission tokens (leader_admission.cpp)
  std::function<void(const std::string&)> on_queue_conflict_;
};

}  // namespace pushonce::leader
