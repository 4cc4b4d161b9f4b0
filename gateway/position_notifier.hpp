#pragma once
// Live queue positions (docs/protocol.md position frames) without a Redis write per waiting
// user: every script that moves a queue publishes the queue's name on NS:leader:wake;
// this gateway, for the queues its sessions wait in, then reads the positions of its own
// waiting users (one pipelined ZRANK each, at most once per `debounce`) and pushes a
// position frame to the sessions whose position changed. A user no longer waiting
// (assigned, left) stops being watched.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "gateway/refresh_schedule.hpp"

namespace pushonce::gateway {

class session;

class position_notifier : public std::enable_shared_from_this<position_notifier> {
 public:
  position_notifier(boost::asio::any_io_executor ex, std::shared_ptr<redis::connection> conn,
                    keys k, std::chrono::milliseconds debounce = std::chrono::milliseconds(50));

  /// Thread-safe. `position` is what the session was last told (join/position reply).
  void watch(std::shared_ptr<session> s, std::string queue, std::string user, long long position);
  void unwatch(const session* s, std::string queue);
  void unwatch_all(const session* s);
  /// A queue changed (a wake message).
  void on_queue_changed(std::string queue);
  /// Every watched queue may have changed (after a subscriber reconnect).
  void refresh_all();

 private:
  struct watcher {
    std::weak_ptr<session> s;
    std::string user;
    long long last = 0;
  };
  void schedule(const std::string& queue);
  /// One refresh of a queue at a time: a change seen while one runs schedules one more
  /// after it (a join/leave flood costs one ZRANK pass per queue per debounce, never more;
  /// refresh_schedule decides).
  boost::asio::awaitable<void> run_refresh(std::string queue);
  boost::asio::awaitable<void> refresh(std::string queue);

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  std::chrono::milliseconds debounce_;
  boost::asio::steady_timer timer_;
  refresh_schedule schedule_;
  std::map<std::string, std::map<const session*, watcher>> watched_;  // queue → sessions
};

}  // namespace pushonce::gateway
