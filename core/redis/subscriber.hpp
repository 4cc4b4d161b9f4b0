#pragma once
// A Pub/Sub connection: SUBSCRIBE (or SSUBSCRIBE for sharded channels) with every channel
// re-subscribed after a reconnect. Messages are handed to one callback on the
// subscriber's strand; the callback must not block.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "core/redis/endpoint.hpp"
#include "core/redis/link_handle.hpp"

namespace pushonce::redis {

class subscriber : public link_handle, public std::enable_shared_from_this<subscriber> {
 public:
  using message_fn = std::function<void(const std::string& channel, std::string payload)>;
  using clock_type = std::chrono::steady_clock;

  static std::shared_ptr<subscriber> create(boost::asio::any_io_executor ex,
                                            connection_options opts, message_fn on_message,
                                            bool sharded = false);

  // start(), stop(), on_connect(), connected() come from link_handle. on_connect runs once
  // every channel is subscribed again after a (re)connect: messages published while the
  // connection was down are lost, and this is where callers re-read what they missed.

  /// Adds a channel; completes when Redis has confirmed the subscription (or with an error
  /// when not connected within the command timeout; the channel stays in the set and is
  /// subscribed on the next connect). Thread-safe.
  boost::asio::awaitable<std::error_code> subscribe(std::string channel);
  /// Removes a channel (fire and forget). Thread-safe.
  void unsubscribe(std::string channel);
  /// Sharded: runs on the strand for each channel the server gave up (its slot moved to
  /// another node: a `sunsubscribe` push, or MOVED to an SSUBSCRIBE). The channel is no
  /// longer subscribed here. Thread-safe; set it before start() to miss nothing.
  void on_dropped(std::function<void(const std::string& channel)> fn);
  /// Runs on the strand for each channel Redis refused to subscribe (an ACL without the
  /// channel: NOPERM) and has now confirmed on a retry: messages published in between were
  /// not received. Refused channels are retried with a backoff and logged. Thread-safe; set
  /// it before start() to miss nothing.
  void on_resubscribed(std::function<void(const std::string& channel)> fn);
  /// Runs on the strand when the connection is lost, with the last time anything was read
  /// from it: messages published since then may be lost (until on_connect runs again).
  /// Thread-safe; set it before start() to miss nothing.
  void on_lost(std::function<void(clock_type::time_point heard_until)> fn);

 private:
  struct state;
  explicit subscriber(std::shared_ptr<state> st);
  std::shared_ptr<state> state_;
};

}  // namespace pushonce::redis
