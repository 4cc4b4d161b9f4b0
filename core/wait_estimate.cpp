#include "core/wait_estimate.hpp"

#include <algorithm>
#include <cmath>

namespace pushonce {

namespace {
// Assignments within [start, now] (a bucket the start cuts counts in part, except the one
// holding `first`: all of it is after `first`). When the window's start falls in a quiet
// span (a pause, a lull), it moves up to the first bucket with assignments, and past that
// bucket once it is over: when in it service resumed is unknown, the buckets after it are
// the pace.
struct wait_window_count {
  double count = 0;
  long long start = 0;
};

wait_window_count wait_window(const assignment_record& r, long long now_ms, long long span_ms) {
  wait_window_count w;
  w.start = std::max(*r.first_ms, now_ms - span_ms);
  bool seen = false;
  for (const auto& [b, n] : r.buckets) {
    const long long from = b * assignment_bucket_ms, to = from + assignment_bucket_ms;
    if (to <= w.start || n <= 0 || from > now_ms) continue;
    if (!seen) {
      seen = true;
      if (from > w.start) {  // quiet before it
        w.start = from;
        if (now_ms >= to) {
          w.start = to;
          continue;
        }
      }
    }
    if (from >= w.start || w.start == *r.first_ms) {
      w.count += static_cast<double>(n);
    } else {
      w.count += static_cast<double>(n) * static_cast<double>(to - w.start) /
                 static_cast<double>(assignment_bucket_ms);
    }
  }
  return w;
}
}  // namespace

double recent_assignments_per_minute(const assignment_record& r, long long now_ms) {
  if (!r.first_ms || !r.last_ms || now_ms - *r.last_ms > assignment_window_ms) return 0;
  for (long long span : {60'000LL, 120'000LL, assignment_window_ms}) {
    auto w = wait_window(r, now_ms, span);
    if (w.count < static_cast<double>(wait_estimate_min_count) && span != assignment_window_ms)
      continue;
    if (w.count <= 0) return 0;
    const long long elapsed = std::max<long long>(now_ms - w.start, 1000);
    return w.count * 60000.0 / static_cast<double>(elapsed);
  }
  return 0;
}

std::optional<long long> estimate_wait_s(long long position, const assignment_record& r,
                                         long long now_ms, bool paused, bool prequeue) {
  if (paused || prequeue || position <= 0) return std::nullopt;
  return wait_s_at(position, recent_assignments_per_minute(r, now_ms));
}

std::optional<long long> wait_s_at(long long position, double per_min) {
  if (!(per_min > 0) || position <= 0) return std::nullopt;
  const double s = std::ceil(static_cast<double>(position) * 60.0 / per_min - 1e-9);
  return static_cast<long long>(std::clamp(s, 0.0, 1e12));
}

}  // namespace pushonce
