#pragma once
// Sharded Pub/Sub on a Redis Cluster (SSUBSCRIBE): one sharded redis::subscriber per master
// that serves the slot of a wanted channel. The slot map is read with CLUSTER SLOTS through
// a cluster connection, at start, every few seconds, after a node gave a channel up (a
// `sunsubscribe` push when its slot migrated or the master turned replica, or MOVED to an
// SSUBSCRIBE) and while a node's connection is down; the channels whose owner changed are
// subscribed on the new owner (decisions: redis::channel_routes). Messages published while a
// channel was moving are lost: once it is subscribed again on a node — after a move, or
// after that node's connection came back — the `resubscribed` callback runs for it with the
// time since when it was not heard, and the owner re-reads what it missed (the gateway: a
// catch-up from the inbox; a worker: a sweep of the shard's outbox). That time is the last
// read on a connection that was lost, the `sunsubscribe` push of a slot that migrated, or
// the map read before the one that moved the channel, whichever came first.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "core/redis/connection.hpp"
#include "core/redis/subscriber.hpp"

namespace pushonce::redis {

class sharded_subscriber {
 public:
  using message_fn = subscriber::message_fn;
  using channel_fn = std::function<void(const std::string& channel)>;
  using clock_type = std::chrono::steady_clock;
  /// A channel subscribed again, and since when it was not heard.
  using resumed_fn =
      std::function<void(const std::string& channel, clock_type::time_point deaf_since)>;

  /// `opts.cluster`: the seeds (per-node options are derived from `opts`); `cluster`: a
  /// cluster connection (started by its owner) that answers CLUSTER SLOTS. `on_message` runs
  /// on a node subscriber's strand and must not block.
  static std::shared_ptr<sharded_subscriber> create(boost::asio::any_io_executor ex,
                                                    connection_options opts,
                                                    std::shared_ptr<connection> cluster,
                                                    message_fn on_message);
  ~sharded_subscriber();
  sharded_subscriber(const sharded_subscriber&) = delete;
  sharded_subscriber& operator=(const sharded_subscriber&) = delete;

  /// Runs (on the subscriber's strand) for a channel subscribed again after a move or a
  /// node reconnect. Thread-safe; set it before start().
  void on_resubscribed(resumed_fn fn);
  void on_resubscribed(channel_fn fn);
  /// Reads the slot map and keeps it fresh until stop(). Thread-safe.
  void start();
  /// Stops every node subscriber. Thread-safe.
  void stop();

  /// Wants `channel`; completes when the node that owns its slot confirmed the SSUBSCRIBE
  /// (an error when that did not happen within about the command timeout; the channel stays
  /// wanted and is placed by a later map read). Thread-safe.
  boost::asio::awaitable<std::error_code> subscribe(std::string channel);
  /// Stops wanting `channel` (fire and forget). Thread-safe.
  void unsubscribe(std::string channel);

  /// The map was read and every wanted channel is placed on a connected node.
  bool connected() const;

 private:
  struct state;
  explicit sharded_subscriber(std::shared_ptr<state> st) : state_(std::move(st)) {}
  std::shared_ptr<state> state_;
};

}  // namespace pushonce::redis
