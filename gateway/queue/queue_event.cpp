#include "gateway/queue/queue_event.hpp"

#include <charconv>

namespace pushonce::gateway {

namespace {

// The next space-separated word of `s` (advanced past it), or empty at the end.
std::string_view next_word(std::string_view& s) {
  auto end = s.find(' ');
  auto word = s.substr(0, end);
  s = end == std::string_view::npos ? std::string_view{} : s.substr(end + 1);
  return word;
}

std::optional<long long> positive(std::string_view w) {
  long long v = 0;
  auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
  if (ec != std::errc{} || p != w.data() + w.size() || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<queue_event> parse_queue_event(std::string_view payload) {
  queue_event e;
  e.queue = std::string(next_word(payload));
  auto seq = positive(next_word(payload));
  auto kind = next_word(payload);
  if (e.queue.empty() || !seq || (kind != "j" && kind != "r" && kind != "m")) return std::nullopt;
  e.seq = *seq;
  if (kind == "m") {
    auto position = positive(next_word(payload));
    auto ticket = positive(next_word(payload));
    if (!position || !ticket || payload.empty()) return std::nullopt;
    queue_event::moved_users m{*position, *ticket, {}};
    while (!payload.empty()) {
      auto u = next_word(payload);
      if (u.empty()) return std::nullopt;
      m.users.emplace_back(u);
    }
    e.moved = std::move(m);
    return e;
  }
  e.removal = kind == "r";
  while (!payload.empty()) {
    auto t = positive(next_word(payload));
    if (!t) return std::nullopt;
    e.tickets.push_back(*t);
  }
  return e;
}

}  // namespace pushonce::gateway
