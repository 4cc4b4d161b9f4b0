#pragma once
// The leader lease decision, with no Redis and no timers (the daemon's lease_loop only
// carries it out). The lease script (lua/leader_lease.lua) answers a fencing token (> 0:
// the caller holds the lease), 0 (another holder's lease is live), or the call fails.
//
// Invariants:
//  - the next call is `acquire` while standing by and `renew` while leading, every third
//    of the lease;
//  - a leader that could not renew for more than 2/3 of the lease steps down at once: by
//    the time the lease lapses (its full lifetime) it must have stopped assigning, since a
//    standby may take over then;
//  - a token different from ours (a newer holder, or ours re-acquired after expiry) is
//    adopted as a new leadership: the assigner re-reads its queues with the new token;
//  - a fenced answer from an assignment: a queue's fence is above our token. While we hold
//    the lease no other leader may act, so the fence is stale (a failover lost the
//    counter's last increments): the next call is `advance`, which moves the fencing
//    counter past the fence (only while the lease is ours) and leads with the new token.
//    A fence met again and again (3 times within a lease) gives the lease up (`give_up`):
//    the leader releases it and waits a lease, so that a standby takes over. A fence that
//    could not be read steps down as before (the next acquire finds the lease ours and
//    reads the fence again);
//  - on stop, a leader releases the lease so that a standby takes over without waiting.

#include <chrono>
#include <optional>
#include <string_view>

namespace pushonce::redis {
struct result;
}

namespace pushonce::leader {

/// What the daemon does after a decision.
enum class lease_action {
  lead,       // start (or restart) assigning with token()
  hold,       // nothing changes (still leading, or still standing by after an error)
  step_down,  // stop assigning now (why() says why)
  standby,    // another holder has the lease: keep waiting
  refence,    // a queue's fence is above our token: call `advance` now (refence_above())
  give_up,    // stop assigning and release the lease (why() says why)
};

/// The lease script call to make next.
enum class lease_call { acquire, renew, release, advance };

/// The lease script's answer, or that the call failed.
struct lease_reply {
  enum class kind { token, held_by_other, failed };
  kind what = kind::failed;
  long long token = 0;

  static lease_reply from(const redis::result& r);
};

class lease_state {
 public:
  using clock_type = std::chrono::steady_clock;

  lease_state(std::chrono::milliseconds lease, clock_type::time_point now);

  /// The mode of the next lease script call: acquire, renew, advance (past
  /// refence_above()) or release (after give_up).
  lease_call next_call() const;
  /// The fence the next `advance` call must move the counter past.
  long long refence_above() const { return refence_above_; }
  /// When the next call is due, after the last decision.
  clock_type::time_point next_wake() const { return next_wake_; }

  /// The answer of an acquire/renew call made at `now`.
  lease_action on_reply(const lease_reply& r, clock_type::time_point now);
  /// An assignment was fenced at `now`: the queue's fence (`stored`, when it could be read)
  /// is above our token (`why` is logged).
  lease_action on_fenced(std::string_view why, std::optional<long long> stored,
                         clock_type::time_point now);
  /// The release after give_up was made at `now`: stand by for a lease before acquiring.
  void on_released(clock_type::time_point now);
  /// Stop (SIGTERM): true when the lease is ours and must be released; leading ends.
  bool on_stop();

  bool leading() const { return token_ != 0; }
  long long token() const { return token_; }
  /// Why the last step_down happened.
  std::string_view why() const { return why_; }
  /// Renew at this fraction of the lease; step down after 2/3 without a successful renew.
  std::chrono::milliseconds renew_every() const { return lease_ / 3; }
  std::chrono::milliseconds give_up_after() const { return lease_ * 2 / 3; }

 private:
  lease_action step_down(std::string_view why);

  std::chrono::milliseconds lease_;
  long long token_ = 0;
  clock_type::time_point last_ok_;
  clock_type::time_point next_wake_;
  std::string_view why_;
  long long refence_above_ = 0;  // > 0: the next call is advance
  bool release_ = false;         // the next call is release (give_up)
  int refences_ = 0;             // advances within a lease of the last one
  clock_type::time_point last_refence_{};
};

}  // namespace pushonce::leader
