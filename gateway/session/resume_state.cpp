#include "gateway/session/resume_state.hpp"

#include <algorithm>
#include <charconv>
#include <functional>

namespace pushonce::gateway {

resume_plan plan_resume(const std::optional<std::pair<std::string, long long>>& since,
                        std::string_view epoch, long long latest, long long acked) {
  resume_plan p;
  p.start = std::min(acked, latest);
  if (!since) return p;
  if (since->first != epoch) {
    p.recovered = false;  // offsets of another epoch say nothing about this one
    return p;
  }
  if (since->second > latest) {
    p.start = latest;  // the client claims more than was ever delivered: re-sync
    p.recovered = false;
    return p;
  }
  p.start = since->second;
  return p;
}

welcome_plan plan_welcome(const resume_plan& plan, long long latest,
                          std::optional<long long> first) {
  welcome_plan w{plan.recovered, plan.start};
  if (first ? *first > plan.start + 1 : latest > plan.start) {
    w.recovered = false;  // trimmed (or expired): what is left starts later
    w.skip_to = first ? *first - 1 : latest;
  }
  return w;
}

std::optional<long long> frame_offset(std::string_view frame) {
  // Frames are rendered by the worker; "offset" comes right after the id, whose value is
  // digits, so the first occurrence of the key within the head is the message's offset.
  static constexpr std::string_view key = "\"offset\":";
  auto head = frame.substr(0, std::min<std::size_t>(frame.size(), 96));
  if (head.find("\"type\":\"message\"") == std::string_view::npos) return std::nullopt;
  auto at = head.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const char* b = frame.data() + at + key.size();
  const char* e = frame.data() + frame.size();
  while (b != e && *b == ' ') ++b;
  long long v = 0;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc{} || p == b || v < 0) return std::nullopt;
  return v;
}

std::string_view frame_id(std::string_view frame) {
  static constexpr std::string_view key = "\"id\":\"";
  auto head = frame.substr(0, std::min<std::size_t>(frame.size(), 96));
  if (head.find("\"type\":\"message\"") == std::string_view::npos) return {};
  auto at = head.find(key);
  if (at == std::string_view::npos) return {};
  auto rest = frame.substr(at + key.size());
  auto end = rest.find('"');
  if (end == std::string_view::npos) return {};
  return rest.substr(0, end);
}

bool offsets_went_back(std::string_view session_epoch, long long last_sent,
                       std::string_view stored_epoch, long long stored_latest) {
  return stored_epoch != session_epoch || stored_latest < last_sent;
}

namespace {
std::size_t id_hash(std::string_view id) {
  if (id.empty()) return 0;
  auto h = std::hash<std::string_view>{}(id);
  return h == 0 ? 1 : h;
}
}  // namespace

bool resume_state::went_back(long long off, std::string_view id) {
  if (!sent_ids_ || id.empty()) return false;
  const auto& [at, sent] = (*sent_ids_)[static_cast<std::size_t>(off) % remembered_ids];
  if (at != off || sent == 0 || sent == id_hash(id)) return false;
  regressed_ = true;
  return true;
}

void resume_state::note_sent(long long off, std::string_view id) {
  if (!sent_ids_) sent_ids_ = std::make_unique<sent_ring>();
  (*sent_ids_)[static_cast<std::size_t>(off) % remembered_ids] = {off, id_hash(id)};
}

void resume_state::begin(long long start) {
  last_sent_ = start;
  known_ = 0;
  regressed_ = false;
  lost_ = false;
  sent_ids_.reset();
  catching_up_ = true;
  buffer_.clear();
  buffer_bytes_ = 0;
}

void resume_state::skip_to(long long offset) {
  last_sent_ = std::max(last_sent_, offset);
}

void resume_state::begin_catch_up() {
  catching_up_ = true;
  for (const auto& f : buffer_)
    if (auto off = frame_offset(*f)) known_ = std::max(known_, *off);
}

resume_state::live_result resume_state::on_live(const frame_ptr& f) {
  auto off = frame_offset(*f);
  bool gap = false;
  if (off && *off <= last_sent_)
    return went_back(*off, frame_id(*f)) ? live_result::regressed : live_result::drop;
  if (!catching_up_) {
    if (!off) return live_result::send;
    if (*off == last_sent_ + 1) {
      last_sent_ = *off;
      note_sent(*off, frame_id(*f));
      return live_result::send;
    }
    gap = true;  // what is missing is in the inbox: catch up, keeping this frame
  }
  if (buffer_.size() >= limits_.max_buffered_frames ||
      buffer_bytes_ + f->size() > limits_.max_buffered_bytes)
    return live_result::overflow;
  buffer_.push_back(f);
  buffer_bytes_ += f->size();
  if (gap) {
    catching_up_ = true;
    return live_result::gap;
  }
  return live_result::buffered;
}

bool resume_state::on_replay(long long offset, std::string_view id) {
  if (lost_) return false;
  if (offset <= last_sent_) {
    went_back(offset, id);
    return false;
  }
  if (offset != last_sent_ + 1) {
    lost_ = true;  // the inbox no longer holds last_sent_ + 1 (trimmed)
    return false;
  }
  last_sent_ = offset;
  note_sent(offset, id);
  return true;
}

std::vector<resume_state::frame_ptr> resume_state::finish_catch_up() {
  std::vector<frame_ptr> out;
  if (lost_) return out;
  // Message frames in offset order, each in one of the places the message frames held
  // (state frames keep theirs): live frames may arrive out of order.
  std::vector<std::pair<long long, std::size_t>> messages;  // (offset, index in buffer_)
  for (std::size_t i = 0; i < buffer_.size(); ++i)
    if (auto off = frame_offset(*buffer_[i])) messages.emplace_back(*off, i);
  if (!std::is_sorted(messages.begin(), messages.end())) {
    std::vector<frame_ptr> by_offset;
    auto order = messages;
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [_, i] : order) by_offset.push_back(buffer_[i]);
    for (std::size_t j = 0; j < messages.size(); ++j) buffer_[messages[j].second] = by_offset[j];
  }
  out.reserve(buffer_.size());
  std::vector<frame_ptr> held;
  for (auto& f : buffer_) {
    auto off = frame_offset(*f);
    if (!off) {
      out.push_back(std::move(f));
    } else if (!held.empty()) {
      held.push_back(std::move(f));
    } else if (*off <= last_sent_) {
      went_back(*off, frame_id(*f));
    } else if (*off == last_sent_ + 1) {
      last_sent_ = *off;
      note_sent(*off, frame_id(*f));
      out.push_back(std::move(f));
    } else if (*off <= known_) {
      lost_ = true;  // in the inbox when the read began, yet the read did not reach it
      break;
    } else {
      held.push_back(std::move(f));  // heard after the read began: one more pass
    }
  }
  buffer_ = std::move(held);
  buffer_bytes_ = 0;
  for (const auto& f : buffer_) buffer_bytes_ += f->size();
  known_ = 0;
  catching_up_ = lost_ || !buffer_.empty();
  if (lost_) {
    buffer_.clear();
    buffer_bytes_ = 0;
  }
  return out;
}

}  // namespace pushonce::gateway
