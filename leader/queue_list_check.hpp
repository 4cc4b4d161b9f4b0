#pragma once
// The leader's queue-list check (leader/queue_list decides): at start, a --queue list that
// lacks a queue of the namespace is refused before the daemon starts; while it runs, the
// daemon checks again every third of a lease and stops (exit 2) on a conflict.

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/keys.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::leader {

class queue_list_check {
 public:
  queue_list_check(std::shared_ptr<redis::connection> conn, const keys& k,
                   const std::vector<std::string>& mine)
      : conn_(std::move(conn)), keys_(k), mine_(mine) {}

  /// Called (once) when another leader registered a queue `mine` lacks.
  void on_conflict(std::function<void(const std::string&)> fn) { on_conflict_ = std::move(fn); }
  /// Every third of a lease, once this leader's queues are registered: SMEMBERS NS:queues.
  boost::asio::awaitable<void> run();

 private:
  std::shared_ptr<redis::connection> conn_;
  const keys& keys_;                      // the daemon's
  const std::vector<std::string>& mine_;  // the daemon's --queue list
  std::function<void(const std::string&)> on_conflict_;
};

/// Before the daemon starts: the conflict's message, if any. An unreachable Redis is not a
/// conflict: the daemon's own check runs once it answers.
std::optional<std::string> queue_conflict_at_start(const common_options& common,
                                                   const std::vector<std::string>& mine);

}  // namespace pushonce::leader
