#pragma once
// Polling clients (docs/protocol.md "Polling clients"): apps and scripts without a WebSocket or an
// EventSource poll JSON. Decided without sockets:
// - poll_path: /api/queue/Q/<action> -> the queue and the action;
// - poll_retry_after: when a waiting poller should ask again (the position cadence by
//   distance, at most a third of the accept timeout);
// - poll_table: per gateway, each poller's last ticket answer (a poll sooner than its
//   Retry-After is answered from it without Redis) and when it last polled (a poller is a
//   session for presence, closed after 3 x Retry-After without a poll). Bounded.

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce::gateway {

enum class poll_action { challenge, join, ticket, accept, leave };

struct poll_target {
  std::string queue;
  poll_action action = poll_action::ticket;
};
/// The queue and action of /api/queue/Q/ACTION (ACTION: challenge, join, ticket, accept,
/// leave); std::nullopt for any other path. The queue name is not validated here.
std::optional<poll_target> poll_path(std::string_view path);
/// ACTION as the path names it (an answer's "op").
std::string_view poll_action_name(poll_action a);

/// Seconds until a poller at `position` (0: pre-queued) with estimated wait `eta_s` should
/// ask again: 1 s near the head, eta ÷ 10 further back, at most 20 s, and at most a third
/// of `accept_timeout_s` when the queue has one (an offer must be seen in time); at least 1.
long long poll_retry_after(long long position, std::optional<long long> eta_s,
                           long long accept_timeout_s);

/// A ticket answer as sent: status, JSON body, Retry-After (0: none).
struct poll_answer {
  unsigned status = 202;
  std::string body;
  long long retry_after_s = 0;
};

class poll_table {
 public:
  using clock = std::chrono::steady_clock;
  explicit poll_table(std::size_t capacity = 200000) : capacity_(capacity) {}

  /// The last answer to (user, queue) when its Retry-After has not passed at `now`; the
  /// poll is counted either way. `first` is set when the poller was not known (a new
  /// presence session).
  std::optional<poll_answer> poll(const std::string& user, const std::string& queue,
                                  clock::time_point now, bool& first);
  /// Keeps `answer` as the last one of (user, queue) at `now`.
  void answered(const std::string& user, const std::string& queue, poll_answer answer,
                clock::time_point now);
  /// The poller leaves (leave, or its admission answered): forgets it; true when it was known.
  bool forget(const std::string& user, const std::string& queue);
  /// Pollers silent for 3 x their Retry-After (at least 3 s) at `now`, forgotten here.
  std::vector<std::pair<std::string, std::string>> silent(clock::time_point now);
  std::size_t size() const;

 private:
  struct entry {
    std::optional<poll_answer> answer;
    clock::time_point answered_at{};
    clock::time_point polled_at{};
  };
  mutable std::mutex mutex_;
  std::size_t capacity_;
  std::map<std::pair<std::string, std::string>, entry> pollers_;
};

}  // namespace pushonce::gateway
