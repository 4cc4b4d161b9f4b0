#pragma once
// A queue's assignment rate from the hash assign.lua keeps (NS:{q:Q}:rate: assignments
// per 10 s bucket "<ms div 10000>", and the "first" and "last" assignment's ms), decided
// without sockets. The window reaches back at most `window` and never before the first
// assignment since the queue was last idle for that long, so a fresh opening's rate is
// already its true pace (not diluted by an empty span before it).

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pushonce {

struct assignment_record {
  std::map<long long, long long> buckets;  // bucket (ms div 10000) -> assignments
  std::optional<long long> first_ms, last_ms;
};

inline constexpr long long assignment_bucket_ms = 10'000;
inline constexpr long long assignment_window_ms = 300'000;  // assign.lua's idle restart too

assignment_record parse_assignment_record(
    const std::vector<std::pair<std::string, std::string>>& fields);

/// Fewer assignments than this within the window are no rate (0): a single assignment
/// would otherwise read as 60/min one second after it.
inline constexpr long long assignment_rate_min_count = 2;

/// Assignments per minute at `now_ms`: 0 when fewer than assignment_rate_min_count were
/// assigned within the window (the first second of it counting as one second).
double assignments_per_minute(const assignment_record& r, long long now_ms,
                              long long window_ms = assignment_window_ms);

}  // namespace pushonce
