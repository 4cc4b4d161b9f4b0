#pragma once
// What the cluster client does with one command's answer, with no socket (the decision half
// of redis::cluster_client):
//
//  - a reply that is not a cluster error, or a transport error: complete the caller. A
//    transport error (the command may have run) is never retried; it asks for a map refresh.
//  - MOVED: the slot has a new owner for good: update the map, refresh it, resend there.
//  - ASK: the slot is being migrated and the key is already on the target: resend there
//    once, after ASKING. A second ASK in a row completes the caller with it.
//  - TRYAGAIN (a multi-key command during a migration) and CLUSTERDOWN (a failover in
//    progress): the command did not run; wait (20 ms doubling to 500 ms, never past the
//    command's deadline) and send again; CLUSTERDOWN also refreshes the map.
//  - at most `max_redirects` redirections per command, and none after its deadline: the
//    caller then gets the last error reply.

#include <chrono>
#include <optional>
#include <system_error>

#include "core/redis/reply.hpp"
#include "core/redis/slot_map.hpp"

namespace pushonce::redis {

class cluster_retry {
 public:
  using clock_type = std::chrono::steady_clock;
  enum class action { complete, follow_moved, follow_ask, wait_and_resend };

  struct step {
    action what = action::complete;
    std::optional<redirect> to;        // follow_moved, follow_ask
    std::chrono::milliseconds wait{};  // wait_and_resend
    bool refresh = false;              // the slot map should be read again
  };

  explicit cluster_retry(clock_type::time_point deadline, int max_redirects = 16)
      : deadline_(deadline), left_(max_redirects) {}

  /// The next step after an answer arrived at `now`.
  step next(std::error_code ec, const reply& r, clock_type::time_point now);

 private:
  clock_type::time_point deadline_;
  int left_;
  bool asked_ = false;
  std::chrono::milliseconds backoff_{20};
};

}  // namespace pushonce::redis
