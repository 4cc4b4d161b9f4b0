#pragma once
// What the leader's duties (leader/assigner, leader/opener, leader/presence_keeper) share,
// handed to each by leader/leader_daemon: the connection, the namespace's keys, the
// daemon's settings, and the daemon's answers to "do we lead", "with which fencing token",
// "are we stopping" and "a queue fenced us" (the lease decides what follows).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "leader/daemon_options.hpp"

namespace pushonce::leader {

struct duty_context {
  boost::asio::any_io_executor ex;
  std::shared_ptr<redis::connection> conn;
  const keys& k;               // the daemon's, alive as long as the duties
  const daemon_options& opts;  // the daemon's
  std::function<bool()> leading;
  std::function<long long()> token;  // the fencing token of the lease
  std::function<bool()> stopping;
  /// A fenced reply on `queue`: the daemon reads the queue's fence and the lease decides.
  std::function<boost::asio::awaitable<void>(const std::string& queue, std::string_view why)>
      fenced;
};

}  // namespace pushonce::leader
