#include "gateway/queue/queue_view.hpp"

#include <algorithm>

namespace pushonce::gateway {

queue_view::queue_view(std::size_t ring_events, std::size_t max_held)
    : ring_events_(ring_events), max_held_(max_held) {}

bool queue_view::on_event(long long seq, bool removal, std::span<const long long> tickets) {
  // Each number is heard once per subscription, in increasing order: one heard again means
  // the counter went back (a failover lost its last increments). What the view holds under
  // the old numbers cannot be placed among the new ones: re-read.
  if (heard_ != 0 && seq <= heard_) {
    heard_ = seq;
    counter_went_back();
    return false;
  }
  heard_ = seq;
  if (applied_ != 0 && seq <= applied_) return false;  // counted by a reply already
  const bool gap = applied_ != 0 && seq > applied_ + 1;
  if (gap || resyncing_) {
    if (gap && !resyncing_) needs_resync_ = true;  // a re-read out settles it anyway
    if (held_.size() < max_held_)
      held_.emplace(seq, event{seq, removal, {tickets.begin(), tickets.end()}});
    return false;
  }
  apply(event{seq, removal, {tickets.begin(), tickets.end()}});
  drain_held();
  return true;
}

void queue_view::apply(event e) {
  applied_ = e.seq;
  if (e.removal) {
    for (auto t : e.tickets) {
      active_.erase(t);
      if (!active_.empty()) removed_.insert(t);
    }
  } else {
    e.tickets.clear();  // a join moves nobody who waits already: only its place is kept
  }
  ring_tickets_ += e.tickets.size();
  ring_.push_back(std::move(e));
  while (ring_.size() > 1 && (ring_.size() > ring_events_ || ring_tickets_ > max_held_)) {
    ring_tickets_ -= ring_.front().tickets.size();
    ring_.pop_front();
  }
  activate_pending();
  if (removed_.size() > 2 * active_.size() + 4096) rebase();
}

void queue_view::drain_held() {
  while (!held_.empty() && !resyncing_) {
    auto it = held_.begin();
    if (it->first <= applied_) {
      held_.erase(it);
      continue;
    }
    if (it->first != applied_ + 1) {
      needs_resync_ = true;
      return;
    }
    auto e = std::move(it->second);
    held_.erase(it);
    apply(std::move(e));
  }
}

void queue_view::watch(long long ticket, long long position, long long seq) {
  if (position <= 0 || active_.count(ticket) || pending_.count(ticket)) return;
  if (applied_ == 0 && !resyncing_) applied_ = seq;  // the first thing this view hears
  if (resyncing_ || seq > applied_) {
    pending_[ticket] = {position, seq};  // resynced() or a later event settles it
    return;
  }
  if (seq == applied_) {
    activate(ticket, position);
  } else if (auto p = forward(ticket, position, seq)) {
    if (*p > 0) activate(ticket, *p);
  } else {
    pending_[ticket] = {position, seq};
    needs_resync_ = true;
  }
}

void queue_view::unwatch(long long ticket) {
  active_.erase(ticket);
  pending_.erase(ticket);
}

queue_view::standing queue_view::at(long long ticket) const {
  if (auto it = active_.find(ticket); it != active_.end())
    return {standing::kind::waiting,
            it->second - static_cast<long long>(removed_.order_of_key(ticket))};
  if (pending_.count(ticket)) return {standing::kind::unknown, 0};
  return {};
}

void queue_view::activate(long long ticket, long long position) {
  active_[ticket] = position + static_cast<long long>(removed_.order_of_key(ticket));
}

std::optional<long long> queue_view::forward(long long ticket, long long position,
                                             long long seq) const {
  if (ring_.empty() || ring_.front().seq > seq + 1) return std::nullopt;
  auto from = static_cast<std::size_t>(seq + 1 - ring_.front().seq);
  for (auto i = from; i < ring_.size(); ++i) {
    if (!ring_[i].removal) continue;
    for (auto t : ring_[i].tickets) {
      if (t == ticket) return 0;
      if (t < ticket) --position;
    }
  }
  return position;
}

void queue_view::activate_pending() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.seq > applied_) {
      ++it;
      continue;
    }
    auto p = it->second.seq == applied_ ? std::optional(it->second.position)
                                        : forward(it->first, it->second.position, it->second.seq);
    if (!p) {
      needs_resync_ = true;
      ++it;
      continue;
    }
    if (*p > 0) activate(it->first, *p);
    it = pending_.erase(it);
  }
}

void queue_view::rebase() {
  for (auto& [ticket, base] : active_)
    base -= static_cast<long long>(removed_.order_of_key(ticket));
  removed_.clear();
}

std::vector<long long> queue_view::begin_resync() {
  resyncing_ = true;
  needs_resync_ = false;
  std::vector<long long> tickets;
  tickets.reserve(watched());
  for (auto& [t, _] : active_) tickets.push_back(t);
  for (auto& [t, _] : pending_) tickets.push_back(t);
  return tickets;
}

void queue_view::resynced(long long seq, std::span<const long long> asked,
                          std::span<const resync_item> items) {
  resync_part one{seq, {items.begin(), items.end()}};
  resynced(asked, std::span<const resync_part>(&one, 1));
}

void queue_view::resynced(std::span<const long long> asked, std::span<const resync_part> parts) {
  long long base = applied_;
  if (!parts.empty()) {
    base = parts.front().seq;
    for (const auto& p : parts) base = std::min(base, p.seq);
  }
  resyncing_ = false;
  removed_.clear();
  active_.clear();
  ring_.clear();
  ring_tickets_ = 0;  // events before `base` may be missing: nothing older is brought forward
  applied_ = base;
  for (auto t : asked) pending_.erase(t);
  for (const auto& p : parts) {
    for (const auto& i : p.items) {
      pending_.erase(i.ticket);
      if (i.position <= 0) continue;
      if (p.seq == base)
        active_[i.ticket] = i.position;
      else
        pending_[i.ticket] = {i.position, p.seq};  // the events up to p.seq settle it
    }
  }
  activate_pending();  // watched while the re-read was out
  drain_held();
}

std::vector<std::pair<std::size_t, std::size_t>> reread_chunks(std::size_t n, std::size_t max) {
  if (max == 0) max = 1;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  out.reserve((n + max - 1) / max);
  for (std::size_t b = 0; b < n; b += max) out.emplace_back(b, std::min(n, b + max));
  return out;
}

void queue_view::counter_went_back() {
  ++regressions_;
  needs_resync_ = true;
  held_.clear();  // numbered before the counter went back
  ring_.clear();
  ring_tickets_ = 0;
  // Until the re-read answers, every event is held (its number may be below applied_).
  applied_ = 0;
}

void queue_view::resync_failed() {
  resyncing_ = false;
  needs_resync_ = true;
}

}  // namespace pushonce::gateway
