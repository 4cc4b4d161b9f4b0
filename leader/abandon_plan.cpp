#include "leader/abandon_plan.hpp"

#include <charconv>

namespace pushonce::leader {

std::optional<std::chrono::milliseconds> abandon_after_of(const std::optional<std::string>& field) {
  if (!field || field->empty()) return abandon_plan::default_after;
  long long s = 0;
  auto [end, ec] = std::from_chars(field->data(), field->data() + field->size(), s);
  if (ec != std::errc{} || end != field->data() + field->size() || s < 0)
    return abandon_plan::default_after;
  if (s == 0) return std::nullopt;
  return std::chrono::milliseconds(s * 1000);
}

std::optional<abandon_plan::range> abandon_plan::next_range(
    const std::string& queue, std::optional<std::chrono::milliseconds> after, long long now_ms) {
  if (!after) {
    cursors_.erase(queue);
    return std::nullopt;
  }
  const long long upto = now_ms - after->count();
  auto it = cursors_.find(queue);
  if (it == cursors_.end()) return range{"-inf", std::to_string(upto), batch_};
  const cursor& c = it->second;
  auto at = std::to_string(c.score);
  if (c.group) return range{at, at, 0};
  if (c.score > upto || (c.exclusive && c.score == upto)) return std::nullopt;
  return range{c.exclusive ? "(" + at : at, std::to_string(upto), batch_};
}

std::vector<std::string> abandon_plan::on_read(const std::string& queue, const range& asked,
                                               const std::vector<lua::absent_user>& got) {
  std::vector<std::string> users;
  users.reserve(got.size());
  for (const auto& u : got) users.push_back(u.user);
  cursor& c = cursors_[queue];
  if (asked.limit == 0) {
    // A whole group (or a range read without a limit): everything up to max is dealt with.
    c = cursor{std::stoll(asked.max), true, false, true};
    return users;
  }
  if (static_cast<long long>(got.size()) < asked.limit) {
    // The range was read to its end.
    c = cursor{std::stoll(asked.max), true, false, false};
    return users;
  }
  const long long first = got.front().since, last = got.back().since;
  if (first == last)
    c = cursor{last, false, true, true};  // one ms holds a whole batch: read it all
  else
    c = cursor{last, false, false, true};  // users at `last` may go on past the batch
  return users;
}

bool abandon_plan::more(const std::string& queue) const {
  auto it = cursors_.find(queue);
  return it != cursors_.end() && it->second.more;
}

std::optional<long long> abandon_plan::drop_horizon(
    const std::map<std::string, std::optional<std::chrono::milliseconds>>& queues,
    long long now_ms) const {
  std::optional<long long> horizon;
  for (const auto& [queue, after] : queues) {
    if (!after) continue;
    auto it = cursors_.find(queue);
    if (it == cursors_.end()) return std::nullopt;
    const cursor& c = it->second;
    long long h = c.exclusive ? c.score + 1 : c.score;
    if (!horizon || h < *horizon) horizon = h;
  }
  if (!horizon) return now_ms - default_after.count();
  return horizon;
}

std::vector<std::string> dead_instances(const std::vector<gateway_instance>& all, long long now_ms,
                                        std::chrono::milliseconds grace) {
  std::vector<std::string> out;
  for (const auto& g : all) {
    if (g.heartbeat && *g.heartbeat == g.instance) continue;
    if (g.registered_ms > now_ms - grace.count()) continue;
    out.push_back(g.instance);
  }
  return out;
}

}  // namespace pushonce::leader
