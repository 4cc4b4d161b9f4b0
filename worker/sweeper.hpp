#pragma once
// Recovery (docs/operations.md, recovery sweeper): Pub/Sub drops messages nobody heard, and a
// worker can be down or saturated. Every interval, for each outbox (queue outboxes from
// NS:sources, bus shards), one worker — whoever takes the outbox's sweep lock — walks the
// entries older than the lease from the outbox's cursor, page after page while it makes
// progress, and re-drives every one that is not delivered through claim.lua, so the claim
// stays the one arbiter. sweep_plan decides; this class only does the I/O. The cursor
// (NS:...:sweep) moves past entries that are finished.
// A worker that hears a bus channel again after it could not (its subscriber lost the
// connection, or a shard's channel moved to another master) does not wait the lease for what
// was published meanwhile: catch_up() looks at once at the entries of that time (a
// sweep_plan with a deaf_window), without the lock or the cursor; the claim arbitrates with
// the workers that did hear them.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/claim.hpp"
#include "core/message.hpp"
#include "core/redis/connection.hpp"
#include "worker/sweep_plan.hpp"

namespace pushonce::worker {

struct sweeper_options {
  std::string owner;  // this worker's id (lock value)
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds lease{5000};
  std::chrono::milliseconds dedup_window{std::chrono::minutes(2)};
  std::size_t batch = 100;      // outbox entries read per page (a publish batch is one entry)
  std::size_t max_pages = 100;  // pages per outbox per pass, while each one makes progress
  // A catch-up starts this much before the channel was last heard and ends this much after
  // it was heard again (clock skew between the nodes, a connection loss noticed late).
  std::chrono::milliseconds catch_up_margin{500};
};

struct sweep_stats {
  std::size_t scanned = 0, redriven = 0, malformed = 0, expired = 0;
};

class sweeper {
 public:
  /// redrive(ms): the worker's claim path for messages found undelivered; completes with
  /// one outcome per message (std::nullopt where the call failed).
  /// malformed(entry id, text): an outbox entry that is not a bus message.
  using outcomes = std::vector<std::optional<lua::claim_outcome>>;
  using redrive_fn = std::function<boost::asio::awaitable<outcomes>(std::vector<bus_message>)>;
  using malformed_fn = std::function<void(const std::string&, const std::string&)>;

  sweeper(std::shared_ptr<redis::connection> conn, keys k, sweeper_options opts, redrive_fn redrive,
          malformed_fn malformed);

  using clock_type = std::chrono::steady_clock;

  boost::asio::awaitable<void> run();
  void stop() { stopped_ = true; }
  /// One pass over every outbox.
  boost::asio::awaitable<sweep_stats> sweep_all();
  /// Bus shard `shard`'s channel was not heard from `deaf_since` until `heard_again`: its
  /// outbox entries of that time are re-driven now (what failed to run is retried until the
  /// regular pass would look at it anyway, a lease later).
  boost::asio::awaitable<void> catch_up_shard(unsigned shard, clock_type::time_point deaf_since,
                                              clock_type::time_point heard_again);
  /// The same for the plain channel NS:bus: every outbox published on it (the queues', and
  /// on a single Redis the bus shards').
  boost::asio::awaitable<void> catch_up_bus(clock_type::time_point deaf_since,
                                            clock_type::time_point heard_again);

 private:
  struct outbox_ref {
    std::string stream, cursor, lock, passed;
  };
  boost::asio::awaitable<std::vector<outbox_ref>> outboxes();
  outbox_ref shard_outbox(unsigned shard) const;
  boost::asio::awaitable<void> catch_up(std::vector<outbox_ref> list,
                                        clock_type::time_point deaf_since,
                                        clock_type::time_point heard_again);
  /// The catch-up of one outbox; false when Redis did not answer (to be tried again).
  boost::asio::awaitable<bool> catch_up_one(const outbox_ref& o, clock_type::time_point deaf_since,
                                            clock_type::time_point heard_again, sweep_stats& st);
  /// Steps 2 and 3 of `plan` (batch marks, claim records, re-drives).
  boost::asio::awaitable<void> resolve(sweep_plan& plan);
  /// The reply of TIME in ms (std::nullopt: failed).
  static std::optional<long long> now_of(const redis::result& t);
  boost::asio::awaitable<void> sweep(const outbox_ref& o, sweep_stats& st);
  boost::asio::awaitable<void> check_trimmed(const outbox_ref& o, sweep_stats& st);
  /// One page; false when there is nothing more to do now.
  boost::asio::awaitable<bool> sweep_page(const outbox_ref& o, long long now_ms, sweep_stats& st);
  /// The value at each ref, in order: one HMGET per bucket, or one MGET per 500 string keys
  /// on a single Redis, a GET per key on a cluster (lua::claim_record_reads); std::nullopt
  /// where a read failed.
  boost::asio::awaitable<std::vector<std::optional<redis::reply>>> values(
      std::vector<lua::record_ref> refs);

  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  sweeper_options opts_;
  redrive_fn redrive_;
  malformed_fn malformed_;
  bool stopped_ = false;
};

}  // namespace pushonce::worker
