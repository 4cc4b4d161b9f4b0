#include "gateway/state/session_registry.hpp"

#include <algorithm>

#include "core/redis/sharded_subscriber.hpp"
#include "core/redis/subscriber.hpp"
#include "gateway/protocol/session_handle.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

namespace {
// The sessions of one route that are still alive, appended to `out` (under the mutex).
template <typename Sessions>
void append_live(const Sessions& sessions, std::vector<std::shared_ptr<session_handle>>& out) {
  for (auto& w : sessions)
    if (auto p = w.lock()) out.push_back(std::move(p));
}
}  // namespace

void session_registry::set_subscriber(std::shared_ptr<redis::subscriber> sub) {
  sub_ = std::move(sub);
}

void session_registry::set_sharded_subscriber(std::shared_ptr<redis::sharded_subscriber> sub) {
  sharded_ = std::move(sub);
}

void session_registry::attach(const std::shared_ptr<session_handle>& s) {
  std::lock_guard lock(mutex_);
  all_[s.get()] = s;
}

void session_registry::detach(const session_handle* s) {
  std::lock_guard lock(mutex_);
  all_.erase(s);
}

std::size_t session_registry::size() const {
  std::lock_guard lock(mutex_);
  return all_.size();
}

void session_registry::name(const std::string& id, const std::shared_ptr<session_handle>& s) {
  std::lock_guard lock(mutex_);
  named_[id] = s;
}

void session_registry::unname(const std::string& id) {
  std::lock_guard lock(mutex_);
  named_.erase(id);
}

std::shared_ptr<session_handle> session_registry::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = named_.find(id);
  return it == named_.end() ? nullptr : it->second.lock();
}

std::size_t session_registry::users() const {
  std::lock_guard lock(mutex_);
  return routes_.size();
}

std::vector<std::string> session_registry::routed_users() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  out.reserve(routes_.size());
  for (auto& [ch, r] : routes_) out.push_back(r.user);
  return out;
}

std::vector<std::pair<std::string, std::size_t>> session_registry::routed_user_sessions() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::size_t>> out;
  out.reserve(routes_.size());
  for (auto& [ch, r] : routes_) {
    std::size_t live = 0;
    for (auto& w : r.sessions) live += !w.expired();
    if (live > 0) out.emplace_back(r.user, live);
  }
  return out;
}

asio::awaitable<outcome<none>> session_registry::add_route(std::shared_ptr<session_handle> s,
                                                           std::string user) {
  auto channel = keys_.user_channel(user);
  {
    std::lock_guard lock(mutex_);
    auto& r = routes_[channel];
    if (r.user.empty()) r.user = user;
    r.sessions.push_back(s);
  }
  // Always ask: the subscriber answers at once when the channel is already confirmed, and
  // waits for the confirmation when another session's SUBSCRIBE is still in flight.
  // (An UNSUBSCRIBE of this channel is only ever posted under the lock, before this.)
  std::error_code ec;
  auto name = channel;
  if (auto sharded = sharded_) {
    ec = co_await sharded->subscribe(std::move(channel));
  } else {
    auto sub = sub_;
    ec = co_await sub->subscribe(std::move(channel));
  }
  if (ec) co_return failure{errc::redis_unavailable, "subscribe " + name + ": " + ec.message()};
  co_return none{};
}

void session_registry::remove_route(const session_handle* s, const std::string& user) {
  auto channel = keys_.user_channel(user);
  std::lock_guard lock(mutex_);
  auto it = routes_.find(channel);
  if (it == routes_.end()) return;
  auto& v = it->second.sessions;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](const std::weak_ptr<session_handle>& w) {
                           auto p = w.lock();
                           return !p || p.get() == s;
                         }),
          v.end());
  if (v.empty()) {
    routes_.erase(it);
    // Posted under the lock so that a later add_route's SUBSCRIBE comes after it.
    if (sharded_)
      sharded_->unsubscribe(channel);
    else if (sub_)
      sub_->unsubscribe(channel);
  }
}

void session_registry::on_message(const std::string& channel, std::string payload) {
  std::vector<std::shared_ptr<session_handle>> targets;
  {
    std::lock_guard lock(mutex_);
    auto it = routes_.find(channel);
    if (it == routes_.end()) return;
    append_live(it->second.sessions, targets);
  }
  if (targets.empty()) return;
  auto frame = std::make_shared<const std::string>(std::move(payload));
  for (auto& t : targets) t->deliver(frame);
}

void session_registry::on_subscriber_connect() {
  std::vector<std::shared_ptr<session_handle>> targets;
  {
    std::lock_guard lock(mutex_);
    for (auto& [ch, r] : routes_) append_live(r.sessions, targets);
  }
  for (auto& t : targets) t->request_catch_up();
}

void session_registry::on_channel_resubscribed(const std::string& channel) {
  std::vector<std::shared_ptr<session_handle>> targets;
  {
    std::lock_guard lock(mutex_);
    auto it = routes_.find(channel);
    if (it == routes_.end()) return;
    append_live(it->second.sessions, targets);
  }
  for (auto& t : targets) t->request_catch_up();
}

std::size_t session_registry::close_user(const std::string& user, std::uint16_t code,
                                         const std::string& reason) {
  auto channel = keys_.user_channel(user);
  std::vector<std::shared_ptr<session_handle>> targets;
  {
    std::lock_guard lock(mutex_);
    auto it = routes_.find(channel);
    if (it != routes_.end())
      for (auto& w : it->second.sessions)
        if (auto s = w.lock()) targets.push_back(std::move(s));
  }
  for (auto& t : targets) t->shutdown(code, reason);
  return targets.size();
}

void session_registry::close_all(std::uint16_t code, const std::string& reason) {
  std::vector<std::shared_ptr<session_handle>> targets;
  {
    std::lock_guard lock(mutex_);
    for (auto& [p, w] : all_)
      if (auto s = w.lock()) targets.push_back(std::move(s));
  }
  for (auto& t : targets) t->shutdown(code, reason);
}

}  // namespace pushonce::gateway
