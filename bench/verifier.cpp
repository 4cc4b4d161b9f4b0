#include "bench/verifier.hpp"

#include <algorithm>

namespace pushonce::bench {

void session_counts::add(const session_counts& o) {
  received += o.received;
  duplicates += o.duplicates;
  out_of_order += o.out_of_order;
  gaps += o.gaps;
  gap_offsets += o.gap_offsets;
  reconnects += o.reconnects;
  not_recovered += o.not_recovered;
  foreign += o.foreign;
}

session_verifier::session_verifier(std::uint64_t user, std::uint64_t users)
    : user_(user), users_(std::max<std::uint64_t>(1, users)) {}

void session_verifier::on_welcome(bool resumed, bool recovered, std::string_view epoch,
                                  std::int64_t offset, std::int64_t now) {
  if (first_welcome_ < 0)
    first_welcome_ = now;
  else
    ++counts_.reconnects;
  connected_ = true;
  const bool same_epoch = epoch == epoch_;
  epoch_ = std::string(epoch);
  if (!recovered) {
    // The start asked for could not be honoured: anything before may be missing, and the
    // next frame's offset is the new baseline.
    ++counts_.not_recovered;
    not_recovered_at_.push_back(now);
    baseline_ = false;
    last_offset_ = offset;
    return;
  }
  if (!resumed || !same_epoch) {
    // A first hello (no `since`): the replay starts after the user's acked offset, which
    // this tool never moves; the first frame sets the baseline.
    baseline_ = false;
    if (!same_epoch) last_offset_ = 0;
  }
  // A resume honoured: the next offset is last_offset_ + 1.
}

session_verifier::verdict session_verifier::on_message(std::uint64_t seq, std::int64_t offset) {
  if (seq % users_ != user_) {
    ++counts_.foreign;
    return verdict::foreign;
  }
  const auto slot = static_cast<std::size_t>(seq / users_);
  if (slot >= seen_.size()) seen_.resize(std::max(slot + 1, seen_.size() * 2), 0);
  if (seen_[slot]) {
    ++counts_.duplicates;
    return verdict::duplicate;
  }
  seen_[slot] = 1;
  ++counts_.received;
  if (!baseline_) {
    baseline_ = true;
    last_offset_ = offset;
  } else if (offset == last_offset_ + 1) {
    last_offset_ = offset;
  } else if (offset > last_offset_ + 1) {
    ++counts_.gaps;
    counts_.gap_offsets += static_cast<std::uint64_t>(offset - last_offset_ - 1);
    last_offset_ = offset;
  } else {
    ++counts_.out_of_order;  // the resume point stays at the highest offset in order
  }
  return verdict::fresh;
}

bool session_verifier::received(std::uint64_t seq) const {
  if (seq % users_ != user_) return false;
  const auto slot = static_cast<std::size_t>(seq / users_);
  return slot < seen_.size() && seen_[slot] != 0;
}

bool session_verifier::announced_after(std::int64_t t) const {
  return std::any_of(not_recovered_at_.begin(), not_recovered_at_.end(),
                     [t](std::int64_t at) { return at > t; });
}

void ledger_totals::add(const ledger_totals& o) {
  published += o.published;
  refused += o.refused;
  unknown += o.unknown;
  expected += o.expected;
  delivered += o.delivered;
  lost += o.lost;
  announced_missing += o.announced_missing;
  delivered_refused += o.delivered_refused;
}

void delivery_ledger::sent(std::uint64_t seq, std::int64_t due) {
  if (seq >= due_.size()) {
    due_.resize(seq + 1, 0);
    state_.resize(seq + 1, state::unknown);
  }
  due_[seq] = due;
}

void delivery_ledger::set(std::uint64_t seq, state s) {
  if (seq < state_.size()) state_[seq] = s;
}

ledger_totals delivery_ledger::message_totals() const {
  ledger_totals t;
  for (auto s : state_) {
    if (s == state::published)
      ++t.published;
    else if (s == state::refused)
      ++t.refused;
    else
      ++t.unknown;
  }
  return t;
}

void delivery_ledger::account(const session_verifier& s, ledger_totals& t) const {
  if (!s.welcomed()) return;
  for (std::uint64_t seq = s.user(); seq < state_.size(); seq += users_) {
    const bool got = s.received(seq);
    if (state_[seq] == state::refused) {
      if (got) ++t.delivered_refused;
      continue;
    }
    if (state_[seq] != state::published || due_[seq] < s.first_welcome()) continue;
    ++t.expected;
    if (got)
      ++t.delivered;
    else if (s.announced_after(due_[seq]))
      ++t.announced_missing;
    else
      ++t.lost;
  }
}

}  // namespace pushonce::bench
