#include "gateway/http/poll.hpp"

#include <algorithm>

namespace pushonce::gateway {

std::string_view poll_action_name(poll_action a) {
  switch (a) {
    case poll_action::challenge:
      return "challenge";
    case poll_action::join:
      return "join";
    case poll_action::ticket:
      return "ticket";
    case poll_action::accept:
      return "accept";
    case poll_action::leave:
      return "leave";
  }
  return "ticket";
}

std::optional<poll_target> poll_path(std::string_view path) {
  constexpr std::string_view prefix = "/api/queue/";
  if (path.substr(0, prefix.size()) != prefix) return std::nullopt;
  auto rest = path.substr(prefix.size());
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  auto queue = rest.substr(0, slash);
  auto action = rest.substr(slash + 1);
  poll_target t{std::string(queue), poll_action::ticket};
  if (action == "challenge")
    t.action = poll_action::challenge;
  else if (action == "join")
    t.action = poll_action::join;
  else if (action == "ticket")
    t.action = poll_action::ticket;
  else if (action == "accept")
    t.action = poll_action::accept;
  else if (action == "leave")
    t.action = poll_action::leave;
  else
    return std::nullopt;
  return t;
}

long long poll_retry_after(long long position, std::optional<long long> eta_s,
                           long long accept_timeout_s) {
  long long s = 1;
  if (position > 100 && eta_s) s = std::clamp<long long>(*eta_s / 10, 1, 20);
  if (position == 0) s = 5;  // pre-queued: the opening is announced to the next poll
  if (accept_timeout_s > 0) s = std::min(s, std::max<long long>(1, accept_timeout_s / 3));
  return std::max<long long>(1, s);
}

std::optional<poll_answer> poll_table::poll(const std::string& user, const std::string& queue,
                                            clock::time_point now, bool& first) {
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(user, queue);
  auto it = pollers_.find(key);
  first = it == pollers_.end();
  if (first) {
    if (pollers_.size() >= capacity_) return std::nullopt;  // not tracked: answered live
    it = pollers_.emplace(key, entry{}).first;
  }
  it->second.polled_at = now;
  const auto& a = it->second.answer;
  if (a && a->retry_after_s > 0 &&
      now - it->second.answered_at < std::chrono::seconds(a->retry_after_s))
    return a;
  return std::nullopt;
}

void poll_table::answered(const std::string& user, const std::string& queue, poll_answer answer,
                          clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto it = pollers_.find({user, queue});
  if (it == pollers_.end()) return;
  it->second.answer = std::move(answer);
  it->second.answered_at = now;
}

bool poll_table::forget(const std::string& user, const std::string& queue) {
  std::lock_guard lock(mutex_);
  return pollers_.erase({user, queue}) > 0;
}

std::vector<std::pair<std::string, std::string>> poll_table::silent(clock::time_point now) {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = pollers_.begin(); it != pollers_.end();) {
    const long long retry =
        it->second.answer ? std::max<long long>(1, it->second.answer->retry_after_s) : 1;
    if (now - it->second.polled_at >= std::chrono::seconds(3 * retry)) {
      out.push_back(it->first);
      it = pollers_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::size_t poll_table::size() const {
  std::lock_guard lock(mutex_);
  return pollers_.size();
}

}  // namespace pushonce::gateway
