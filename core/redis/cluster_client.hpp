#pragma once
// A Redis Cluster client behind redis::connection: one pipelined, reconnecting
// redis::connection per master, the slot map read with CLUSTER SLOTS from any reachable
// node (seeds first), and every command routed by the slot of its first key (scripts: their
// first KEYS). The map is read again on a timer, after a MOVED or CLUSTERDOWN, and when a
// command meets a connection that is down. Decisions live in socket-free pieces: hash_slot,
// command_keys (routes), slot_map (the map, redirect parsing), cluster_retry (MOVED / ASK /
// TRYAGAIN / CLUSTERDOWN). This class only carries them out, on one strand.
//
// Order: commands for one node are written in the order they were issued (one strand
// routes them all into that node's pipeline). A command that was redirected is resent after
// the ones issued after it.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <string_view>
#include <system_error>

#include "core/redis/endpoint.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::redis {

class cluster_client : public std::enable_shared_from_this<cluster_client> {
 public:
  using handler_type = boost::asio::any_completion_handler<void(std::error_code, reply)>;

  /// `opts.cluster` holds the seeds (not empty).
  static std::shared_ptr<cluster_client> create(boost::asio::any_io_executor ex,
                                                connection_options opts);
  ~cluster_client();

  /// Starts the seed connections and the map refresher. Thread-safe.
  void start();
  /// Stops every node connection; pending commands fail with error::stopped. Thread-safe.
  void stop();
  /// Runs after the first slot map is read, and again after a map read that follows a
  /// time without one.
  void on_connect(std::function<void()> fn);
  /// The last read of the slot map succeeded (a node answered; the map is known).
  bool connected() const;
  const connection_options& options() const;

  /// Routes one command; thread-safe; the handler runs on its own executor.
  void initiate(command cmd, handler_type handler);
  /// Sends a command to the master of `route_key`'s slot, whatever its own keys (WAIT
  /// after writes to that slot). Thread-safe.
  void initiate_at(std::string_view route_key, command cmd, handler_type handler);

 private:
  struct state;
  explicit cluster_client(std::shared_ptr<state> st) : state_(std::move(st)) {}
  std::shared_ptr<state> state_;
};

}  // namespace pushonce::redis
