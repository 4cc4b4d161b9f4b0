#include "worker/sweep_plan.hpp"

#include <algorithm>
#include <charconv>

namespace pushonce::worker {

namespace {
std::optional<long long> stream_ms(const std::string& entry_id) {
  auto dash = entry_id.find('-');
  auto ms = entry_id.substr(0, dash);
  if (ms.empty() || ms.size() > 15 || ms.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(ms.data(), ms.data() + ms.size(), v);
  if (ec != std::errc{} || end != ms.data() + ms.size()) return std::nullopt;
  return v;
}
}  // namespace

std::optional<deaf_window> deaf_window_of(long long redis_now_ms,
                                          std::chrono::steady_clock::time_point local_now,
                                          std::chrono::steady_clock::time_point deaf_since,
                                          std::chrono::steady_clock::time_point heard_again,
                                          std::chrono::milliseconds margin,
                                          std::chrono::milliseconds lease,
                                          std::chrono::milliseconds window) {
  auto ago = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(local_now - t).count();
  };
  deaf_window w{redis_now_ms - ago(deaf_since) - margin.count(),
                std::min(redis_now_ms, redis_now_ms - ago(heard_again) + margin.count())};
  w.from_ms = std::max(w.from_ms, redis_now_ms - (window - 2 * lease).count());
  if (w.from_ms > w.until_ms) return std::nullopt;
  return w;
}

sweep_plan::sweep_plan(std::chrono::milliseconds lease, std::chrono::milliseconds window,
                       long long now_ms, std::optional<deaf_window> deaf)
    : lease_(lease), window_(window), now_ms_(now_ms), deaf_(deaf) {}

void sweep_plan::take(std::vector<outbox_entry> page) {
  auto too_old_after = (window_ - 2 * lease_).count();
  for (auto& e : page) {
    auto ms = stream_ms(e.id);
    auto age = ms ? now_ms_ - *ms : 0;
    if (deaf_) {
      // Nobody may have heard these: looked at whatever their age.
      if (!ms || *ms < deaf_->from_ms) continue;
      if (*ms > deaf_->until_ms) break;  // heard again: the normal path has them
    } else if (ms && age < lease_.count()) {
      break;  // the normal path may still be on it
    }
    ++entries_;
    auto lines = split_bus_payload(e.raw);
    if (lines.empty()) lines.push_back(e.raw);  // an empty entry: malformed
    for (auto line : lines) {
      item it{e.id, std::string(line), parse_bus_message(line), age > too_old_after, fate::unknown};
      if (!it.m) it.f = deaf_ ? fate::blocked : fate::malformed;  // a catch-up leaves them
      items_.push_back(std::move(it));
    }
  }
}

std::vector<const bus_message*> sweep_plan::to_check_batches() const {
  std::vector<const bus_message*> out;
  for (std::size_t i = 0; i < items_.size(); ++i)
    if ((i == 0 || items_[i - 1].entry_id != items_[i].entry_id) && items_[i].m)
      out.push_back(&*items_[i].m);
  return out;
}

void sweep_plan::on_batch_marks(const std::vector<std::optional<lua::batch_mark>>& marks) {
  std::size_t j = 0;
  for (std::size_t first = 0; first < items_.size();) {
    std::size_t end = first + 1;
    while (end < items_.size() && items_[end].entry_id == items_[first].entry_id) ++end;
    if (items_[first].m) {
      const auto& mark = j < marks.size() ? marks[j] : std::nullopt;
      ++j;
      bool all_parsed = std::all_of(items_.begin() + static_cast<std::ptrdiff_t>(first),
                                    items_.begin() + static_cast<std::ptrdiff_t>(end),
                                    [](const item& it) { return it.m.has_value(); });
      if (mark && mark->messages == end - first && all_parsed) {
        std::vector<std::string_view> lines;
        for (std::size_t i = first; i < end; ++i) lines.emplace_back(items_[i].line);
        if (lua::batch_digest(lines) == mark->digest)
          for (std::size_t i = first; i < end; ++i) items_[i].f = fate::finished;
      }
    }
    first = end;
  }
}

std::vector<const bus_message*> sweep_plan::to_check() const {
  std::vector<const bus_message*> out;
  for (const auto& it : items_)
    if (it.m && it.f == fate::unknown) out.push_back(&*it.m);
  return out;
}

void sweep_plan::on_records(const std::vector<std::optional<lua::claim_record>>& records) {
  using kind = lua::claim_record::kind;
  std::size_t j = 0;
  for (auto& it : items_) {
    if (!it.m || it.f != fate::unknown) continue;  // malformed, or finished by a batch mark
    const auto& r = j < records.size() ? records[j] : std::nullopt;
    ++j;
    if (!r) {
      it.f = fate::blocked;  // unreadable: look again next time
    } else if (r->state == kind::delivered && r->unpublished) {
      // Delivered by a worker that did not publish its frame (--wait-replicas: it failed
      // or died after the claim): the re-drive publishes it, whatever its age.
      it.f = fate::redrive;
    } else if (r->state == kind::delivered || r->state == kind::dead) {
      it.f = fate::finished;
    } else if (r->state == kind::leased && r->until_ms >= now_ms_) {
      it.f = fate::blocked;  // its holder is on it (a dead-letter, or a failed write)
    } else {
      // Retention is the regular pass's to count: a catch-up leaves a too old entry.
      it.f = !it.too_old ? fate::redrive : deaf_ ? fate::blocked : fate::expired;
    }
  }
}

std::vector<bus_message> sweep_plan::to_redrive() const {
  std::vector<bus_message> out;
  for (const auto& it : items_)
    if (it.f == fate::redrive) out.push_back(*it.m);
  return out;
}

void sweep_plan::on_redriven(const std::vector<std::optional<lua::claim_outcome>>& outcomes) {
  using st = lua::claim_state;
  std::size_t j = 0;
  for (auto& it : items_) {
    if (it.f != fate::redrive) continue;
    const auto& o = j < outcomes.size() ? outcomes[j] : std::nullopt;
    ++j;
    bool done = o && !o->frame_pending &&
                (o->state == st::delivered || o->state == st::done || o->state == st::dead);
    it.f = done ? fate::redriven : fate::blocked;
    if (o && o->state == st::expired)  // claim.lua found it too old
      it.f = deaf_ ? fate::blocked : fate::expired;
  }
}

std::string sweep_plan::cursor() const {
  std::string at;
  if (deaf_) return at;  // a catch-up looks at part of the outbox only
  for (std::size_t i = 0; i < items_.size(); ++i) {
    const auto& it = items_[i];
    bool finished = it.f == fate::finished || it.f == fate::redriven || it.f == fate::malformed ||
                    it.f == fate::expired;
    if (!finished) break;
    // Past an entry only when its last message is finished too.
    if (i + 1 == items_.size() || items_[i + 1].entry_id != it.entry_id) at = it.entry_id;
  }
  return at;
}

std::size_t sweep_plan::passed() const {
  auto at = cursor();
  std::size_t n = 0;
  std::string last;
  for (const auto& it : items_) {
    if (at.empty()) break;
    if (it.entry_id != last) ++n, last = it.entry_id;
    if (it.entry_id == at) break;
  }
  return n;
}

trimmed_count trimmed_unseen(long long added, long long length, bool has_cursor,
                             std::optional<long long> passed) {
  auto trimmed = std::max(0LL, added - length);
  if (!passed) return {has_cursor ? 0 : trimmed, trimmed, has_cursor};
  if (trimmed <= *passed) return {0, *passed};
  return {trimmed - *passed, trimmed};
}

std::vector<std::pair<std::string, std::string>> sweep_plan::malformed() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& it : items_)
    if (it.f == fate::malformed) out.emplace_back(it.entry_id, it.line);
  return out;
}

std::size_t sweep_plan::redriven() const {
  return std::count_if(items_.begin(), items_.end(),
                       [](const item& it) { return it.f == fate::redriven; });
}

std::size_t sweep_plan::expired() const {
  return std::count_if(items_.begin(), items_.end(),
                       [](const item& it) { return it.f == fate::expired; });
}

}  // namespace pushonce::worker
