#pragma once
// The estimated wait of a position frame (docs/protocol.md "eta_s"), decided without
// sockets from the queue's assignment record (core/assignment_rate) and its settings.
//
// The pace is the recent one: the shortest of the last 60, 120 and 300 s that holds at
// least `wait_estimate_min_count` assignments (the 300 s one when none does), each
// counted from no earlier than the first assignment since the queue was last idle for
// 5 minutes, and from the first 10 s bucket with an assignment in it (so a pause or a
// quiet span before the window's first assignment does not dilute the pace once service
// resumes). A burst weighs on the estimate for at most a minute once the pace after it
// fills the short window; a slow trickle is measured over the longer windows.

#include <optional>

#include "core/assignment_rate.hpp"

namespace pushonce {

inline constexpr long long wait_estimate_min_count = 20;

/// Assignments per minute at the recent pace (see above): 0 when nothing was assigned
/// within 300 s.
double recent_assignments_per_minute(const assignment_record& r, long long now_ms);

/// Whole seconds until a user at `position` is likely assigned at `per_min` assignments a
/// minute: position ÷ pace, rounded up; nullopt when per_min is not positive.
std::optional<long long> wait_s_at(long long position, double per_min);

/// Whole seconds until a user at `position` (1 = next) is likely assigned: position ÷
/// the recent pace, rounded up; nullopt when there is nothing to go by (no assignment
/// within 300 s, the queue paused or in its pre-queue, no position).
std::optional<long long> estimate_wait_s(long long position, const assignment_record& r,
                                         long long now_ms, bool paused, bool prequeue);

}  // namespace pushonce
