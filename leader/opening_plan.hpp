#pragma once
// The opening of a queue's pre-queue as the leader runs it (docs/protocol.md "Pre-queue"),
// decided without sockets: which script call comes next (opening_draw.lua pages, then
// opening_move.lua batches), what each reply means, and where a new leader resumes.
//
// Shuffled: every user who joined before the opening gets a random draw key (the
// leader's cryptographic RNG), a page per call; only once every one has a key are users
// moved, lowest keys first, so the order is uniform. Unshuffled: users are moved in join
// order at once. Each move batch lands at the tail of the waiting list with the next
// tickets; the last one opens the queue.
//
// Resuming (a leader killed mid-opening, or fenced): Redis holds the whole state (the
// pre-queue, the draw keys, the moved users in the waiting list), so a new plan simply
// starts from the beginning: the draw pass gives keys only to users who have none (a
// drawn user keeps its key), then the moves go on from the lowest key left. No user is
// moved twice (a move takes the user out of the pre-queue in the same script) or lost
// (a user leaves the pre-queue only into the waiting list, or by `leave`).

#include <cstddef>
#include <span>

#include "core/lua/opening.hpp"
#include "core/queue_settings.hpp"

namespace pushonce::leader {

class opening_plan {
 public:
  struct step {
    enum class kind { none, draw, move } what = kind::none;
    long long after = 0;  // draw: the join order to go on after
    long long count = 0;  // draw: keys to send; move: the most users to move
  };

  /// `batch`: draw keys or moved users per script call (1..1000).
  explicit opening_plan(long long batch = 1000);

  /// True when the queue is in its pre-queue and its opening time has come.
  static bool due(const queue_settings& s, long long now_ms);

  /// Starts (or resumes) an opening.
  void begin(bool shuffle);
  step next() const;
  void on_draw(const lua::opening_draw_reply& r);
  void on_move(const lua::opening_move_reply& r);
  bool finished() const { return phase_ == phase::finished; }
  long long moved() const { return moved_; }
  long long drawn() const { return drawn_; }

 private:
  enum class phase { idle, draw, move, finished };
  long long batch_;
  phase phase_ = phase::idle;
  long long after_ = 0;
  long long moved_ = 0, drawn_ = 0;
};

/// A draw key from 7 random bytes: an integer below 2^49 (at most 15 digits: what the
/// scripts take as an integer argument; exact in a zset score).
long long draw_key_of(std::span<const unsigned char, 7> bytes);

}  // namespace pushonce::leader
