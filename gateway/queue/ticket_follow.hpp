#pragma once
// After a re-read of a queue's positions, which sessions follow their user to another
// ticket. Plain logic; position_notifier::resync carries the moves out (its per-ticket
// counts, the pre-queued index, when the session is told next).
//
// A session watches one ticket of its user (0: pre-queued, no ticket yet). The re-read
// gives the user's ticket and position now (position 0: not waiting). The session follows
// only a ticket that waits (position > 0) and is not the one it watches: the user left and
// joined again, or an opening moved a pre-queued user into the queue. A user not waiting
// any more keeps its session's ticket: the view's events say it left.

#include <optional>

namespace pushonce::gateway {

struct ticket_move {
  long long from = 0;  // 0: the session was pre-queued
  long long to = 0;
  bool was_prequeued() const { return from == 0; }
};

/// watching: the session's ticket (0: pre-queued); ticket, position: the user's after the
/// re-read. std::nullopt: the session stays where it is.
std::optional<ticket_move> follow_ticket(long long watching, long long ticket, long long position);

}  // namespace pushonce::gateway
