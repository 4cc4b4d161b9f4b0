#pragma once
// One pipelined, reconnecting Redis connection (the Boost.Redis shape): hiredis is used only
// as the RESP codec over an Asio socket we own; one writer loop and one reader loop on one
// strand; replies are matched to commands in order. Commands issued while disconnected wait
// (bounded) for the next connection. Every command has a deadline.
//
// With cluster seeds in its options (connection_options::cluster) the same object is a Redis
// Cluster client (redis::cluster_client: a connection like this one per master, commands
// routed by key); callers do not change. A single-node connection pays one null-pointer
// test per command for this.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <system_error>

#include "core/redis/endpoint.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::redis {

/// What a command completes with: a transport error, or a reply (which may be a Redis error).
struct result {
  std::error_code ec;
  redis::reply value;

  /// True when the command reached Redis and Redis did not answer with an error.
  bool ok() const { return !ec && !value.is_error(); }
};

class cluster_client;

class connection : public std::enable_shared_from_this<connection> {
 public:
  using handler_type = boost::asio::any_completion_handler<void(std::error_code, reply)>;

  /// A cluster client when opts.cluster is not empty.
  static std::shared_ptr<connection> create(boost::asio::any_io_executor ex,
                                            connection_options opts);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Starts connecting (and reconnecting, with backoff) until stop(). Thread-safe.
  void start();
  /// Fails everything pending with error::stopped and closes the socket(s).
  void stop();
  /// Runs on the connection's strand after each (re)connect (a cluster: after the first
  /// slot map is read).
  void on_connect(std::function<void()> fn);
  bool connected() const;
  const connection_options& options() const;
  bool is_cluster() const { return cluster_ != nullptr; }

  /// Sends one command. Thread-safe; the completion runs on the caller's executor.
  template <typename Token>
  auto async_exec(command cmd, Token&& token) {
    return boost::asio::async_initiate<Token, void(std::error_code, reply)>(
        [this](auto handler, command c) {
          initiate(std::move(c), handler_type(std::move(handler)));
        },
        token, std::move(cmd));
  }

  /// Coroutine form of async_exec.
  boost::asio::awaitable<result> exec(command cmd);
  /// A command without keys (WAIT) sent where `route_key` lives: on a cluster, the master
  /// of that key's slot (the connection that carried the writes to it); on a single Redis,
  /// the same as exec.
  boost::asio::awaitable<result> exec_at(std::string route_key, command cmd);
  /// exec_at for several commands at once (one pipeline per node); results in order.
  boost::asio::awaitable<std::vector<result>> exec_all_at(std::vector<std::string> route_keys,
                                                          std::vector<command> cmds);
  /// Sends several commands back to back (one pipeline); results in the same order.
  boost::asio::awaitable<std::vector<result>> exec_all(std::vector<command> cmds);

 private:
  struct state;
  struct handle;
  struct batch_initiation;
  explicit connection(std::shared_ptr<state> st);
  explicit connection(std::shared_ptr<cluster_client> cluster);
  void initiate(command cmd, handler_type handler);

  std::shared_ptr<state> state_;             // a single node
  std::unique_ptr<handle> handle_;           // its start/stop controls
  std::shared_ptr<cluster_client> cluster_;  // or a cluster
};

}  // namespace pushonce::redis
