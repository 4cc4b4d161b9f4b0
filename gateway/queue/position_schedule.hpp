#pragma once
// When position_notifier pushes a queue's position frames, decided without sockets or
// timers. Positions are state: a session gets at most one position frame per `interval`,
// always the latest value. A change to a queue that was quiet is pushed after `settle`
// (so the events of one burst go out together); while the queue keeps moving, at most once
// per `interval`; the final positions go out at most one interval after the last change.

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pushonce::gateway {

class position_schedule {
 public:
  using clock = std::chrono::steady_clock;

  explicit position_schedule(clock::duration interval,
                             clock::duration settle = std::chrono::milliseconds(20));

  /// `queue`'s positions changed at `now`.
  void changed(const std::string& queue, clock::time_point now);
  /// Some of `queue`'s sessions are due again at `at` (position_cadence): push then, or
  /// earlier when a change asks for it.
  void wake_at(const std::string& queue, clock::time_point at);
  /// The queues to push at `now` (each marked pushed at `now`).
  std::vector<std::string> due(clock::time_point now);
  /// When the next push is due (the timer to arm), if any queue waits for one.
  std::optional<clock::time_point> next() const;
  /// The queue is no longer watched.
  void forget(const std::string& queue);

  clock::duration interval() const { return interval_; }

 private:
  struct state {
    std::optional<clock::time_point> pushed;  // the last push
    std::optional<clock::time_point> due;     // changed since: push then
  };
  clock::duration interval_, settle_;
  std::map<std::string, state> queues_;
};

/// Position cadence by distance (docs/protocol.md): the least time between two position
/// frames of one session at `position` whose estimated wait is `eta_s`: the interval for
/// the first `cadence_head` positions and without an estimate, else eta_s ÷ 10, at least
/// the interval and at most `cadence_max_gap` (unless the interval is longer).
inline constexpr long long cadence_head = 100;
inline constexpr std::chrono::seconds cadence_max_gap{20};
position_schedule::clock::duration position_gap(position_schedule::clock::duration interval,
                                                long long position, std::optional<long long> eta_s);

/// Far from the head (docs/protocol.md "Position cadence"): beyond `approx_after` a
/// position frame carries the position rounded to 3 significant digits ("approx":true),
/// sent when the rounded value changes, and while the position moves at least every
/// approx_refresh (its eta_s is refreshed too): frames per second stay bounded at any size.
inline constexpr long long default_approx_after = 10000;
inline constexpr std::chrono::seconds approx_refresh{60};

/// `v` rounded to 3 significant digits, halves up: 123456 → 123000, 9995 → 10000.
long long round_3_significant(long long v);

/// What a session was last told (the join's or position answer counts: exact).
struct told_position {
  long long value = 0;  // the position in the last frame (rounded when approx)
  long long exact = 0;  // the exact position it stood for
  bool approx = false;
  position_schedule::clock::time_point at{};  // when it was sent
};

/// The frame to send a session standing at `position` at `now`, given what it was last
/// told; std::nullopt when nothing is to be sent. `approx_after` 0: always exact.
std::optional<told_position> next_position_frame(const told_position& last, long long position,
                                                 position_schedule::clock::time_point now,
                                                 long long approx_after);

/// The sessions of one queue by the time each may be told its position next: a push
/// visits only the sessions due (so its cost follows the frames sent, not the number
/// waiting). Key: a session's identity.
template <typename Key>
class position_due {
 public:
  using clock = position_schedule::clock;

  /// `key` is due at `at` (replacing when it was due before).
  void set(Key key, clock::time_point at) {
    remove(key);
    at_.emplace(key, at);
    order_.emplace(at, key);
  }
  void remove(Key key) {
    auto it = at_.find(key);
    if (it == at_.end()) return;
    order_.erase({it->second, key});
    at_.erase(it);
  }
  /// The keys due at `now`, earliest first; each stays until set() again or remove().
  std::vector<Key> due(clock::time_point now) const {
    std::vector<Key> out;
    for (auto it = order_.begin(); it != order_.end() && it->first <= now; ++it)
      out.push_back(it->second);
    return out;
  }
  /// When the next key is due, if any is held.
  std::optional<clock::time_point> next() const {
    if (order_.empty()) return std::nullopt;
    return order_.begin()->first;
  }
  std::size_t size() const { return at_.size(); }

 private:
  std::map<Key, clock::time_point> at_;
  std::set<std::pair<clock::time_point, Key>> order_;
};

}  // namespace pushonce::gateway
