#include "gateway/position_notifier.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/exit_on_exception.hpp"
#include "gateway/protocol.hpp"
#include "gateway/session.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

position_notifier::position_notifier(asio::any_io_executor ex,
                                     std::shared_ptr<redis::connection> conn, keys k,
                                     std::chrono::milliseconds debounce)
    : strand_(asio::make_strand(ex)),
      conn_(std::move(conn)),
      keys_(std::move(k)),
      debounce_(debounce),
      timer_(strand_) {}

void position_notifier::watch(std::shared_ptr<session> s, std::string queue, std::string user,
                              long long position) {
  asio::post(strand_, [self = shared_from_this(), s = std::move(s), q = std::move(queue),
                       u = std::move(user), position]() mutable {
    auto* key = s.get();
    self->watched_[q][key] = watcher{std::move(s), std::move(u), position};
  });
}

void position_notifier::unwatch(const session* s, std::string queue) {
  asio::post(strand_, [self = shared_from_this(), s, q = std::move(queue)] {
    auto it = self->watched_.find(q);
    if (it == self->watched_.end()) return;
    it->second.erase(s);
    if (it->second.empty()) self->watched_.erase(it);
  });
}

void position_notifier::unwatch_all(const session* s) {
  asio::post(strand_, [self = shared_from_this(), s] {
    for (auto it = self->watched_.begin(); it != self->watched_.end();) {
      it->second.erase(s);
      it = it->second.empty() ? self->watched_.erase(it) : std::next(it);
    }
  });
}

void position_notifier::on_queue_changed(std::string queue) {
  asio::post(strand_, [self = shared_from_this(), q = std::move(queue)]() mutable {
    if (self->watched_.count(q)) self->schedule(q);
  });
}

void position_notifier::refresh_all() {
  asio::post(strand_, [self = shared_from_this()] {
    for (auto& [q, _] : self->watched_) self->schedule(q);
  });
}

// On the strand. Collects changes for `debounce_`, then refreshes every changed queue.
void position_notifier::schedule(const std::string& queue) {
  if (!schedule_.changed(queue)) return;
  timer_.expires_after(debounce_);
  timer_.async_wait([self = shared_from_this()](std::error_code) {
    for (auto& q : self->schedule_.timer_fired())
      asio::co_spawn(self->strand_, self->run_refresh(q), exit_on_exception("position refresh"));
  });
}

asio::awaitable<void> position_notifier::run_refresh(std::string queue) {
  auto self = shared_from_this();
  std::string q = queue;
  co_await refresh(std::move(q));
  if (schedule_.refresh_done(queue)) schedule(queue);
}

asio::awaitable<void> position_notifier::refresh(std::string queue) {
  auto it = watched_.find(queue);
  if (it == watched_.end()) co_return;
  std::vector<std::string> users;
  for (auto& [_, w] : it->second) users.push_back(w.user);
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  std::vector<redis::command> cmds;
  auto waiting = keys_.queue(queue, "waiting");
  for (auto& u : users) cmds.push_back({"ZRANK", waiting, u});
  auto rs = co_await conn_->exec_all(std::move(cmds));
  std::map<std::string, std::optional<long long>> positions;
  for (std::size_t i = 0; i < users.size(); ++i) {
    if (!rs[i].ok()) co_return;  // Redis trouble: the next change or reconnect retries
    positions[users[i]] =
        rs[i].value.is_nil() ? std::nullopt : std::optional<long long>(rs[i].value.integer + 1);
  }
  it = watched_.find(queue);  // the map may have changed while we waited
  if (it == watched_.end()) co_return;
  for (auto w = it->second.begin(); w != it->second.end();) {
    auto s = w->second.s.lock();
    auto p = positions.find(w->second.user);
    if (!s || (p != positions.end() && !p->second)) {  // gone, or no longer waiting
      w = it->second.erase(w);
      continue;
    }
    if (p != positions.end() && *p->second != w->second.last) {
      w->second.last = *p->second;
      s->deliver(std::make_shared<const std::string>(render_position(queue, *p->second)));
    }
    ++w;
  }
  if (it->second.empty()) watched_.erase(it);
}

}  // namespace pushonce::gateway
