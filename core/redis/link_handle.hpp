#pragma once
// The public, thread-safe controls that redis::connection and redis::subscriber share:
// start, stop, on_connect, connected. Each call is posted to the link's strand and keeps
// the owner's state alive until it has run. Stopping on destruction is included.

#include <functional>
#include <memory>

#include "core/redis/endpoint.hpp"

namespace pushonce::redis {

class link;

class link_handle {
 public:
  /// Starts connecting (and reconnecting, with backoff) until stop().
  void start();
  /// Fails everything pending with error::stopped and closes the socket.
  void stop();
  /// Called on the strand after each (re)connect once the link is usable (a subscriber:
  /// once every channel is subscribed again).
  void on_connect(std::function<void()> fn);

  bool connected() const;
  const connection_options& options() const;

 protected:
  /// `io` lives inside `owner`, which is kept alive by every posted call.
  link_handle(std::shared_ptr<void> owner, link& io) : owner_(std::move(owner)), io_(&io) {}
  ~link_handle();
  link_handle(const link_handle&) = delete;
  link_handle& operator=(const link_handle&) = delete;

 private:
  std::shared_ptr<void> owner_;
  link* io_;
};

}  // namespace pushonce::redis
