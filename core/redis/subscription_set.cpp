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
  if (!fresh && !sent_.count(ch) && connected_) {
    // Refused and not retried yet: fail at once (the retry keeps its own backoff).
    return deliver_(std::move(w), retry_.count(ch) ? error::refused : std::error_code{});
  }
  waiters_.emplace(ch, waiter_entry{std::move(w), deadline});
  if (fresh && connected_) send_subscribe({ch});
}

void subscription_set::send_subscribe(const std::vector<std::string>& channels) {
  for (std::size_t i = 0; i < channels.size();) {
    command cmd{sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE"};
    std::deque<std::string> asked;
    for (; i < channels.size() && asked.size() < channels_per_command; ++i) {
      cmd.push_back(channels[i]);
      asked.push_back(channels[i]);
      ++sent_[channels[i]];
    }
    inflight_.push_back(std::move(asked));
    send(std::move(cmd));
  }
}

void subscription_set::unsubscribe(const std::string& ch) {
  if (!wanted_.erase(ch)) return;
  resubscribed(ch);
  retry_.erase(ch);
  if (!connected_) return;
  send({sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", ch});
  if (sharded_) ++unsent_[ch];
}

void subscription_set::on_connected() {
  connected_ = true;
  sent_.clear();
  unsent_.clear();
  outbox_.clear();
  inflight_.clear();
  resubscribing_ = wanted_;
  std::vector<std::string> all(wanted_.begin(), wanted_.end());
  // Sharded: grouped by slot, one SSUBSCRIBE per slot (a command may not span slots).
  auto slot = [this](const std::string& ch) { return sharded_ ? hash_slot(ch) : 0u; };
  if (sharded_)
    std::stable_sort(all.begin(), all.end(),
                     [&](const std::string& a, const std::string& b) { return slot(a) < slot(b); });
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && j - i < channels_per_command && slot(all[j]) == slot(all[i])) ++j;
    send_subscribe({all.begin() + static_cast<std::ptrdiff_t>(i),
                    all.begin() + static_cast<std::ptrdiff_t>(j)});
    i = j;
  }
  for (auto& [_, r] : retry_) r.due.reset();  // sent again just now
  if (resubscribing_.empty()) ready_ = true;
}

void subscription_set::on_disconnected() {
  connected_ = false;
  sent_.clear();
  unsent_.clear();
  resubscribing_.clear();
  outbox_.clear();
  inflight_.clear();
  ready_ = false;
}

std::optional<subscription_set::message> subscription_set::on_reply(reply& r) {
  if (r.is_error()) {
    if (sharded_)
      on_error_reply(r);
    else
      on_refused(r);
    return std::nullopt;
  }
  if (!r.is_array() || r.elements.size() < 2) return std::nullopt;
  const auto& kind = r.elements[0].str;
  const auto& ch = r.elements[1].str;
  if ((kind == "message" || kind == "smessage") && r.elements.size() >= 3) {
    if (!wanted_.count(ch)) return std::nullopt;
    return message{std::move(r.elements[1].str), std::move(r.elements[2].str)};
  }
  if (kind == "subscribe" || kind == "ssubscribe") {
    answered(ch);
    auto it = sent_.find(ch);
    if (it != sent_.end() && --it->second <= 0) {
      sent_.erase(it);
      complete_waiters(ch, {});
    }
    resubscribed(ch);
    if (auto rt = retry_.find(ch); rt != retry_.end() && !sent_.count(ch)) {
      retry_.erase(rt);
      if (wanted_.count(ch)) recovered_.push_back(ch);
    }
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
// Any other error answering an SSUBSCRIBE (NOPERM from a node that was just demoted or
// promoted, CLUSTERDOWN, TRYAGAIN during a failover) drops that command's channels the same
// way: the sharded subscriber asks the slot map again and places them where it says.
void subscription_set::on_error_reply(const reply& r) {
  std::deque<std::string> asked;
  if (!inflight_.empty()) {
    asked = std::move(inflight_.front());
    inflight_.pop_front();
  }
  std::vector<std::string> moved;
  if (auto to = parse_redirect(r)) {
    for (const auto& [ch, n] : sent_)
      if (hash_slot(ch) == to->slot) moved.push_back(ch);
  } else {
    for (const auto& ch : asked)
      if (sent_.count(ch)) moved.push_back(ch);
  }
  for (const auto& ch : moved) dropped(ch);
}

void subscription_set::answered(const std::string& ch) {
  // Confirmations come in the order the channels were named, command after command.
  if (inflight_.empty()) return;
  auto& front = inflight_.front();
  if (!front.empty() && front.front() == ch) front.pop_front();
  if (front.empty()) inflight_.pop_front();
}

void subscription_set::on_refused(const reply& r) {
  if (inflight_.empty()) return;  // not the answer to a SUBSCRIBE (none is out)
  auto channels = std::move(inflight_.front());
  inflight_.pop_front();
  refusal out;
  out.error = r.str;
  for (const auto& ch : channels) {
    auto it = sent_.find(ch);
    if (it != sent_.end() && --it->second <= 0) sent_.erase(it);
    if (!wanted_.count(ch) || sent_.count(ch)) continue;  // unwanted, or asked again since
    complete_waiters(ch, error::refused);
    resubscribed(ch);  // the reconnect's round ends without it
    auto& rt = retry_[ch];
    rt.delay = rt.delay.count() == 0 ? retry_initial : std::min(rt.delay * 2, retry_max);
    rt.due = clock_type::now() + rt.delay;
    out.retry_in = std::max(out.retry_in, rt.delay);
    out.channels.push_back(ch);
  }
  if (!out.channels.empty()) refusals_.push_back(std::move(out));
}

void subscription_set::retry_due(clock_type::time_point now) {
  if (!connected_ || retry_.empty()) return;
  std::vector<std::string> due;
  for (auto& [ch, rt] : retry_) {
    if (!rt.due || *rt.due > now || sent_.count(ch)) continue;
    rt.due.reset();
    due.push_back(ch);
  }
  send_subscribe(due);
}

std::vector<subscription_set::refusal> subscription_set::take_refusals() {
  auto out = std::move(refusals_);
  refusals_.clear();
  return out;
}

std::vector<std::string> subscription_set::take_recovered() {
  auto out = std::move(recovered_);
  recovered_.clear();
  return out;
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
  retry_due(now);
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
