#pragma once
// The abandonment sweep's decisions, with no Redis (leader/presence_keeper carries them
// out; docs/data-model.md, "Presence"):
//  - a queue's abandon_after_s setting (absent: 300 s; 0: never);
//  - per queue, which part of NS:{presence}:absent to read next (a cursor by absence start:
//    every user absent since at or before the cursor has been dealt with for that queue),
//    and which of the users read are abandoned there;
//  - how far `absent` can be forgotten (every queue with abandonment on is past it);
//  - which gateway instances are dead (their heartbeat no longer names them).
//
// Invariants:
//  - a user is abandoned in a queue only when its absence began at or before now minus the
//    queue's abandon_after;
//  - the cursor only moves over users handed out for abandonment (or past a range read to
//    its end), so none is skipped; a user handed out twice is harmless (abandon.lua leaves
//    users who are no longer there alone);
//  - a full batch whose users all began their absence in the same ms is read again as a
//    whole group, so the cursor never sticks.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/lua/presence.hpp"

namespace pushonce::leader {

/// abandon_after_s of a queue's settings hash: nullopt = never (0); an absent or
/// unreadable field is the default, 300 s.
std::optional<std::chrono::milliseconds> abandon_after_of(const std::optional<std::string>& field);

class abandon_plan {
 public:
  static constexpr long long default_batch = 500;
  static constexpr std::chrono::milliseconds default_after{300'000};

  explicit abandon_plan(long long batch = default_batch) : batch_(batch) {}

  /// A ZRANGEBYSCORE of `absent` (min, max as Redis takes them; limit 0 = the whole range).
  struct range {
    std::string min, max;
    long long limit = 0;
    bool operator==(const range&) const = default;
  };

  /// What to read next for `queue`, whose abandon_after is `after` (nullopt: never), with
  /// Redis's clock at `now_ms`; nullopt when nothing is to be read.
  std::optional<range> next_range(const std::string& queue,
                                  std::optional<std::chrono::milliseconds> after, long long now_ms);
  /// What that read returned: the users to abandon in `queue` (all of them: the range only
  /// holds users absent long enough). more() then says whether to read again now.
  std::vector<std::string> on_read(const std::string& queue, const range& asked,
                                   const std::vector<lua::absent_user>& got);
  bool more(const std::string& queue) const;

  /// Users whose absence began before this (ms) can be forgotten: every queue in `queues`
  /// with abandonment on has dealt with them. With none on: `now_ms` minus the default.
  /// nullopt while some such queue has not been read yet.
  std::optional<long long> drop_horizon(
      const std::map<std::string, std::optional<std::chrono::milliseconds>>& queues,
      long long now_ms) const;

  /// The leader stepped down: a later leadership starts from the oldest absence again.
  void reset() { cursors_.clear(); }

 private:
  struct cursor {
    long long score = 0;
    bool exclusive = false;  // every user at `score` is dealt with too
    bool group = false;      // read the users at exactly `score` as a whole next
    bool more = false;
  };
  long long batch_;
  std::map<std::string, cursor> cursors_;
};

/// A gateway instance that holds sessions in NS:{presence}:gws.
struct gateway_instance {
  std::string instance;
  long long registered_ms = 0;  // its first session
  /// The presence instance its gateway's heartbeat names (NS:gateway:ID field `presence`),
  /// nullopt when that heartbeat has lapsed.
  std::optional<std::string> heartbeat;
};

/// The instances whose sessions are to be counted closed: the heartbeat of their gateway
/// has lapsed or names another instance (a restart), and they registered more than `grace`
/// ago (a gateway that has just started may not have beaten yet).
std::vector<std::string> dead_instances(const std::vector<gateway_instance>& all, long long now_ms,
                                        std::chrono::milliseconds grace);

}  // namespace pushonce::leader
