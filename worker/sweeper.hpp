#pragma once
// Recovery (docs/operations.md, recovery sweeper): Pub/Sub drops messages nobody heard, and a
// worker can be down or saturated. Every interval, for each outbox (queue outboxes from
// NS:sources, bus shards), one worker — whoever takes the outbox's sweep lock — walks the
// entries older than the lease from the outbox's cursor, page after page while it makes
// progress, and re-drives every one that is not delivered through claim.lua, so the claim
// stays the one arbiter. sweep_plan decides; this class only does the I/O. The cursor
// (NS:...:sweep) moves past entries that are finished.

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

  boost::asio::awaitable<void> run();
  void stop() { stopped_ = true; }
  /// One pass over every outbox.
  boost::asio::awaitable<sweep_stats> sweep_all();

 private:
  struct outbox_ref {
    std::string stream, cursor, lock, passed;
  };
  boost::asio::awaitable<std::vector<outbox_ref>> outboxes();
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
