#pragma once
// A worker replica: hears every bus payload (a batch of messages) — NS:bus, and on a Redis
// Cluster also each bus shard's own sharded channel NS:{bus:N}:ch — and claims the batch
// with one claim.lua call, which delivers the messages it wins. Up to `concurrency` calls
// are in flight at once on one pipelined connection; the rest wait in a bounded queue.
// claim_policy decides (race, owner, counters, dead letters, batch mark, log lines); this
// class carries it out: subscriptions, the queue (bus_backlog bounds it), Redis calls, the
// stats flush (worker_counters says what), the lease hand-back on shutdown. When a channel
// is heard again after it was not (a lost connection, a shard moving to another master),
// the sweeper catches up at once on what was published meanwhile.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/heartbeat.hpp"
#include "core/keys.hpp"
#include "core/redis/sharded_subscriber.hpp"
#include "core/redis/subscriber.hpp"
#include "core/trace.hpp"
#include "worker/bus_backlog.hpp"
#include "worker/claim_client.hpp"
#include "worker/claim_policy.hpp"
#include "worker/sweeper.hpp"
#include "worker/worker_counters.hpp"
#include "worker/worker_options.hpp"

namespace pushonce::worker {

class bus_worker {
 public:
  bus_worker(boost::asio::any_io_executor ex, redis::connection_options redis, keys k,
             worker_options opts);

  /// What the program does when the namespace's layout is not this worker's (the
  /// heartbeat found it); set before start().
  void on_layout_conflict(heartbeat::conflict_fn fn) { heartbeat_.on_conflict(std::move(fn)); }

  void start();
  /// Stops hearing the bus, waits (up to `drain`) for messages in flight, flushes counters
  /// and removes the heartbeat.
  boost::asio::awaitable<void> stop(std::chrono::milliseconds drain);

  const worker_counters& counters() const { return counters_; }

 private:
  using outcomes = sweeper::outcomes;
  using clock_type = std::chrono::steady_clock;
  void on_bus_message(std::string payload);
  /// A sharded bus channel was subscribed again after it was not heard since `deaf_since`.
  void on_shard_heard_again(const std::string& channel, clock_type::time_point deaf_since,
                            clock_type::time_point heard_again);
  void pump();
  boost::asio::awaitable<void> process(std::string payload);
  /// The payload's bus messages (claim_policy's parse_lines), its malformed lines logged.
  std::vector<bus_message> parse(std::span<const std::string_view> lines);
  /// claim_batch.lua for the batch of `messages` starting with `first_id` (a race that
  /// fails to run is logged).
  boost::asio::awaitable<race_result> race(const std::string& first_id, std::size_t messages,
                                           const std::string& owner);
  /// Claims `batch` (in the parts split_parts gives); one outcome per message.
  boost::asio::awaitable<outcomes> claim_all(std::vector<bus_message> batch, claim_path path,
                                             std::string owner = {});
  /// Carries out settle(): counters, trace events, log lines; true when the message is to
  /// be dead-lettered.
  bool settle_one(const bus_message& m, const lua::claim_outcome& o, claim_path path);
  /// dead_letter.lua for a message claim.lua answered "won" with `number`.
  boost::asio::awaitable<void> dead_letter(const bus_message& m, const std::string& owner,
                                           long long number);
  void on_malformed(const std::string& entry_id, const std::string& raw);
  boost::asio::awaitable<void> add_malformed(std::string raw);
  boost::asio::awaitable<void> flush_stats_loop();
  boost::asio::awaitable<void> flush_stats();
  std::string next_owner();

  boost::asio::any_io_executor ex_;
  keys keys_;
  worker_options opts_;
  std::shared_ptr<redis::connection> conn_;
  std::shared_ptr<redis::subscriber> bus_;
  std::shared_ptr<redis::sharded_subscriber> shard_bus_;  // Redis Cluster: the shards' channels
  claim_client claims_;
  heartbeat heartbeat_;
  tracer trace_;
  sweeper sweeper_;
  std::deque<std::pair<std::string, std::size_t>> queued_;  // payloads heard, their lines
  bus_backlog backlog_;                                     // bounds queued_ (messages and bytes)
  std::map<std::string, std::pair<bus_message, std::string>> leased_;  // id → (message, owner)
  std::size_t inflight_ = 0;
  std::uint64_t owner_seq_ = 0;
  bool stopping_ = false;
  std::optional<clock_type::time_point> bus_deaf_since_;  // NS:bus's connection was lost
  clock_type::time_point bus_connected_at_{};  // its last (re)connect (every channel asked)
  worker_counters counters_;
  worker_counters flushed_;  // what flush_stats() has already added to NS:stats
};

}  // namespace pushonce::worker
