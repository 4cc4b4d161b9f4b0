#pragma once
// The ops of one SSE session (POST /sse/op) take turns, as a WebSocket session reads its
// frames: one op runs at a time, the others wait in arrival order, and the op that finishes
// hands its turn straight to the oldest waiter (nobody can overtake it in between). Plain
// logic, no sockets: a waiter is whatever the shell wakes (a timer of its own, cancelled to
// wake it), so nothing polls and a waiting op costs no CPU.
//
// Invariants:
// - At most one op holds the turn: arrive() answers true to one caller until finish().
// - Waiters get the turn in arrival order; finish() names the one to wake, which then holds
//   the turn (running() stays true across the hand-over).
// - drain() (the session ends) returns every waiter to wake; each of them, once woken, sees
//   the session closing and calls finish() like any op that gave up.
// - No heap memory while nobody waits (an idle session holds an empty vector).

#include <optional>
#include <utility>
#include <vector>

namespace pushonce::gateway {

template <class Waiter>
class op_turns {
 public:
  /// An op arrives: true when it holds the turn now; false when `w` was queued (the op waits
  /// until the shell wakes `w`, then holds the turn).
  bool arrive(Waiter w) {
    if (!running_) {
      running_ = true;
      return true;
    }
    waiting_.push_back(std::move(w));
    return false;
  }

  /// The op holding the turn is done (or gave up): the waiter to wake, which holds the turn
  /// from now on; nullopt when nobody waits (then nobody holds it).
  std::optional<Waiter> finish() {
    if (waiting_.empty()) {
      running_ = false;
      return std::nullopt;
    }
    Waiter next = std::move(waiting_.front());
    waiting_.erase(waiting_.begin());
    return next;
  }

  /// Every waiter, oldest first, to wake because the session ends.
  std::vector<Waiter> drain() { return std::exchange(waiting_, {}); }

  bool running() const { return running_; }
  std::size_t waiting() const { return waiting_.size(); }

 private:
  std::vector<Waiter> waiting_;
  bool running_ = false;
};

}  // namespace pushonce::gateway
