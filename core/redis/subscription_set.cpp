#include "core/redis/subscription_set.hpp"

#include <algorithm>

#include "core/redis/error.hpp"
#include "core/redis/hash_slot.hpp"
#include "core/redis/slot_map.hpp"

namespace pushonce::redis {

subscription_set::subscription_set(bool sharded, deliver_fn deliver)
    : sharded_(sharded), deliver_(std::move(deliver)) {
  if (!deliver_) deliver_ = [](waiter&& w, std::error_code ec) { std::move(w)(ec); };
}

void subscription_set::subscribe(std::string ch, waiter w, clock_type::time_point deadline) {
  if (closed_) return deliver_(std::move(w), closed_);
  bool fresh = wanted_.insert(ch).second;
  if (!fresh && !sent_.count(ch) && connected_) return deliver_(std::move(w), {});
  waiters_.emplace(ch, waiter_entry{std::move(w), deadline});
  if (fresh && connected_) {
    ++sent_[ch];
    send({sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE", ch});
  }
}

void subscription_set::unsubscribe(const std::string& ch) {
  if (!wanted_.erase(ch)) return;
  resubscribed(ch);
  if (!connected_) return;
  send({sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", ch});
  if (sharded_) ++unsent_[ch];
}

void subscription_set::on_connected() {
  connected_ = true;
  sent_.clear();
  unsent_.clear();
  outbox_.clear();
  resubscribing_ = wanted_;
  std::vector<std::string> all(wanted_.begin(), wanted_.end());
  // Sharded: grouped by slot, one SSUBSCRIBE per slot (a command may not span slots).
  auto slot = [this](const std::string& ch) { return sharded_ ? hash_slot(ch) : 0u; };
  if (sharded_)
    std::stable_sort(all.begin(), all.end(),
                     [&](const std::string& a, const std::string& b) { return slot(a) < slot(b); });
  for (std::size_t i = 0; i < all.size();) {
    command cmd{sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE"};
    std::size_t j = i;
    for (; j < all.size() && j - i < channels_per_command && slot(all[j]) == slot(all[i]); ++j) {
      cmd.push_back(all[j]);
      ++sent_[all[j]];
    }
    send(std::move(cmd));
    i = j;
  }
  if (resubscribing_.empty()) ready_ = true;
}

void subscription_set::on_disconnected() {
  connected_ = false;
  sent_.clear();
  unsent_.clear();
  resubscribing_.clear();
  outbox_.clear();
  ready_ = false;
}

std::optional<subscription_set::message> subscription_set::on_reply(reply& r) {
  if (sharded_ && r.is_error()) on_error_reply(r);
  if (!r.is_array() || r.elements.size() < 2) return std::nullopt;
  const auto& kind = r.elements[0].str;
  const auto& ch = r.elements[1].str;
  if ((kind == "message" || kind == "smessage") && r.elements.size() >= 3) {
    if (!wanted_.count(ch)) return std::nullopt;
    return message{std::move(r.elements[1].str), std::move(r.elements[2].str)};
  }
  if (kind == "subscribe" || kind == "ssubscribe") {
    auto it = sent_.find(ch);
    if (it != sent_.end() && --it->second <= 0) {
      sent_.erase(it);
      complete_waiters(ch, {});
    }
    resubscribed(ch);
  }
  if (kind == "sunsubscribe" && sharded_) {
    auto it = unsent_.find(ch);
    if (it != unsent_.end()) {  // the confirmation of our own SUNSUBSCRIBE
      if (--it->second <= 0) unsent_.erase(it);
    } else if (wanted_.count(ch)) {
      dropped(ch);  // the server gave the channel up: its slot moved
    }
  }
  return std::nullopt;
}

// An SSUBSCRIBE sent to a node that does not serve the channel's slot is answered
// "-MOVED <slot> <host:port>": every channel of that slot still waiting here is dropped.
void subscription_set::on_error_reply(const reply& r) {
  auto to = parse_redirect(r);
  if (!to) return;
  std::vector<std::string> moved;
  for (const auto& [ch, n] : sent_)
    if (hash_slot(ch) == to->slot) moved.push_back(ch);
  for (const auto& ch : moved) dropped(ch);
}

void subscription_set::dropped(const std::string& ch) {
  if (!wanted_.erase(ch)) return;
  sent_.erase(ch);
  resubscribed(ch);
  complete_waiters(ch, error::moved);
  dropped_.push_back(ch);
}

std::vector<std::string> subscription_set::take_dropped() {
  auto out = std::move(dropped_);
  dropped_.clear();
  return out;
}

void subscription_set::expire(clock_type::time_point now) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    auto h = std::move(it->second.handler);
    it = waiters_.erase(it);
    deliver_(std::move(h), error::timeout);
  }
}

void subscription_set::close(std::error_code ec) {
  closed_ = ec;
  auto all = std::move(waiters_);
  waiters_.clear();
  for (auto& [ch, w] : all) deliver_(std::move(w.handler), ec);
}

std::vector<command> subscription_set::take_commands() {
  auto out = std::move(outbox_);
  outbox_.clear();
  return out;
}

bool subscription_set::take_ready() {
  bool r = ready_;
  ready_ = false;
  return r;
}

void subscription_set::complete_waiters(const std::string& ch, std::error_code ec) {
  auto [b, e] = waiters_.equal_range(ch);
  std::vector<waiter> done;
  for (auto it = b; it != e; ++it) done.push_back(std::move(it->second.handler));
  waiters_.erase(b, e);
  for (auto& w : done) deliver_(std::move(w), ec);
}

void subscription_set::resubscribed(const std::string& ch) {
  if (resubscribing_.erase(ch) && resubscribing_.empty() && connected_) ready_ = true;
}

}  // namespace pushonce::redis
