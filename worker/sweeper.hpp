#pragma once
// Recovery (DESIGN.md "Message lifecycle" 5): Pub/Sub drops messages nobody heard, and a
// winner can die between claim and deliver. Every interval, for each outbox (queue
// outboxes from NS:sources, bus shards), one worker — whoever takes the outbox's sweep
// lock — walks the entries older than the lease from the outbox's cursor, and re-drives
// every one that is not delivered through the same claim → deliver path, so the claim
// stays the one arbiter. The cursor (NS:...:sweep) moves past entries that are done.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/message.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::worker {

struct sweeper_options {
  std::string owner;  // this worker's id (lock value)
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds lease{5000};
  std::chrono::milliseconds dedup_window{std::chrono::hours(24)};
  std::size_t batch = 500;  // outbox entries read per outbox per sweep
};

struct sweep_stats {
  std::size_t scanned = 0, redriven = 0, malformed = 0;
};

class sweeper {
 public:
  /// redrive(m): the worker's claim → deliver path for a message found undelivered.
  /// malformed(entry id, text): an outbox entry that is not a bus message.
  using redrive_fn = std::function<void(bus_message)>;
  using malformed_fn = std::function<void(const std::string&, const std::string&)>;

  sweeper(std::shared_ptr<redis::connection> conn, keys k, sweeper_options opts, redrive_fn redrive,
          malformed_fn malformed);

  boost::asio::awaitable<void> run();
  void stop() { stopped_ = true; }
  /// One pass over every outbox (tests call it directly).
  boost::asio::awaitable<sweep_stats> sweep_all();

 private:
  struct outbox_ref {
    std::string stream, cursor, lock;
  };
  boost::asio::awaitable<std::vector<outbox_ref>> outboxes();
  boost::asio::awaitable<void> sweep(const outbox_ref& o, long long now_ms, sweep_stats& st);

  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  sweeper_options opts_;
  redrive_fn redrive_;
  malformed_fn malformed_;
  bool stopped_ = false;
};

}  // namespace pushonce::worker
