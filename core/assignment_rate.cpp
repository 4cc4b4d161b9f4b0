#include "core/assignment_rate.hpp"

#include <algorithm>
#include <charconv>

namespace pushonce {

namespace {
std::optional<long long> rate_field_number(const std::string& s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

assignment_record parse_assignment_record(
    const std::vector<std::pair<std::string, std::string>>& fields) {
  assignment_record r;
  for (const auto& [name, value] : fields) {
    auto v = rate_field_number(value);
    if (!v) continue;
    if (name == "first") {
      r.first_ms = *v;
    } else if (name == "last") {
      r.last_ms = *v;
    } else if (auto b = rate_field_number(name)) {
      r.buckets[*b] += *v;
    }
  }
  return r;
}

double assignments_per_minute(const assignment_record& r, long long now_ms, long long window_ms) {
  if (!r.first_ms || !r.last_ms || now_ms - *r.last_ms > window_ms) return 0;
  const long long start = std::max(*r.first_ms, now_ms - window_ms);
  double count = 0;
  for (const auto& [b, n] : r.buckets) {
    const long long from = b * assignment_bucket_ms, to = from + assignment_bucket_ms;
    if (to <= start) continue;
    if (from >= start || start == *r.first_ms) {  // the first bucket: all after `first`
      count += static_cast<double>(n);
    } else {  // a bucket the window's start cuts: its share after the start
      count += static_cast<double>(n) * static_cast<double>(to - start) /
               static_cast<double>(assignment_bucket_ms);
    }
  }
  // One assignment alone is no pace: the rate starts with the second.
  if (count < static_cast<double>(assignment_rate_min_count)) return 0;
  const long long elapsed = std::max<long long>(now_ms - start, 1000);
  return count * 60000.0 / static_cast<double>(elapsed);
}

}  // namespace pushonce
