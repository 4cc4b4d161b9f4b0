#include "gateway/queue/position_schedule.hpp"

#include <algorithm>

namespace pushonce::gateway {

position_schedule::position_schedule(clock::duration interval, clock::duration settle)
    : interval_(interval), settle_(std::min(settle, interval)) {}

void position_schedule::changed(const std::string& queue, clock::time_point now) {
  auto& s = queues_[queue];
  if (s.due) return;  // already waiting for its push
  auto at = now + settle_;
  if (s.pushed) at = std::max(at, *s.pushed + interval_);
  s.due = at;
}

void position_schedule::wake_at(const std::string& queue, clock::time_point at) {
  auto& s = queues_[queue];
  if (!s.due || at < *s.due) s.due = at;
}

position_schedule::clock::duration position_gap(position_schedule::clock::duration interval,
                                                long long position,
                                                std::optional<long long> eta_s) {
  if (position <= cadence_head || !eta_s) return interval;
  const auto tenth = std::chrono::duration_cast<position_schedule::clock::duration>(
      std::chrono::milliseconds(*eta_s * 100));
  const position_schedule::clock::duration most =
      std::max<position_schedule::clock::duration>(interval, cadence_max_gap);
  return std::clamp<position_schedule::clock::duration>(tenth, interval, most);
}

long long round_3_significant(long long v) {
  long long scale = 1;
  while (v / scale >= 1000) scale *= 10;
  if (scale == 1) return v;
  return (v + scale / 2) / scale * scale;
}

std::optional<told_position> next_position_frame(const told_position& last, long long position,
                                                 position_schedule::clock::time_point now,
                                                 long long approx_after) {
  if (position == last.exact) return std::nullopt;
  if (approx_after <= 0 || position <= approx_after)
    return told_position{position, position, false, now};
  const long long rounded = round_3_significant(position);
  if (rounded != last.value || !last.approx || now - last.at >= approx_refresh)
    return told_position{rounded, position, true, now};
  return std::nullopt;
}

std::vector<std::string> position_schedule::due(clock::time_point now) {
  std::vector<std::string> out;
  for (auto& [q, s] : queues_) {
    if (!s.due || *s.due > now) continue;
    s.due.reset();
    s.pushed = now;
    out.push_back(q);
  }
  return out;
}

std::optional<position_schedule::clock::time_point> position_schedule::next() const {
  std::optional<clock::time_point> at;
  for (auto& [_, s] : queues_)
    if (s.due && (!at || *s.due < *at)) at = s.due;
  return at;
}

void position_schedule::forget(const std::string& queue) {
  queues_.erase(queue);
}

}  // namespace pushonce::gateway
