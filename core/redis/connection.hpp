#pragma once
// One pipelined, reconnecting Redis connection (the Boost.Redis shape): hiredis is used only
// as the RESP codec over an Asio socket we own; one writer loop and one reader loop on one
// strand; replies are matched to commands in order. Commands issued while disconnected wait
// (bounded) for the next connection. Every command has a deadline.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <system_error>

#include "core/redis/endpoint.hpp"
#include "core/redis/link_handle.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::redis {

/// What a command completes with: a transport error, or a reply (which may be a Redis error).
struct result {
  std::error_code ec;
  redis::reply value;

  /// True when the command reached Redis and Redis did not answer with an error.
  bool ok() const { return !ec && !value.is_error(); }
};

class connection : public link_handle, public std::enable_shared_from_this<connection> {
 public:
  using handler_type = boost::asio::any_completion_handler<void(std::error_code, reply)>;

  /// start(), stop(), on_connect(), connected() and options() come from link_handle.
  static std::shared_ptr<connection> create(boost::asio::any_io_executor ex,
                                            connection_options opts);

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
  /// Sends several commands back to back (one pipeline); results in the same order.
  boost::asio::awaitable<std::vector<result>> exec_all(std::vector<command> cmds);

 private:
  struct state;
  struct batch_initiation;
  explicit connection(std::shared_ptr<state> st);
  void initiate(command cmd, handler_type handler);

  std::shared_ptr<state> state_;
};

}  // namespace pushonce::redis
