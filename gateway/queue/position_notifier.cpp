#include "gateway/queue/position_notifier.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/wait_estimate.hpp"
#include "gateway/protocol/protocol.hpp"
#include "gateway/protocol/session_handle.hpp"
#include "gateway/queue/queue_event.hpp"
#include "gateway/queue/ticket_follow.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
using clock = position_schedule::clock;

position_notifier::position_notifier(asio::any_io_executor ex,
                                     std::shared_ptr<redis::connection> conn, keys k,
                                     std::chrono::milliseconds interval, std::size_t reread_chunk,
                                     long long approx_after)
    : reread_chunk_(std::max<std::size_t>(reread_chunk, 1)),
      approx_after_(approx_after),
      strand_(asio::make_strand(ex)),
      estimates_(std::make_shared<wait_estimates>(conn, k)),
      api_(std::move(conn), std::move(k)),
      timer_(strand_),
      schedule_(interval) {}

void position_notifier::watch(std::shared_ptr<session_handle> s, std::string queue,
                              std::string user, long long ticket, long long position,
                              long long seq) {
  asio::post(strand_, [self = shared_from_this(), s = std::move(s), q = std::move(queue),
                       u = std::move(user), ticket, position, seq]() mutable {
    auto& st = self->queues_[q];
    auto* key = s.get();
    if (auto old = st.sessions.find(key); old != st.sessions.end()) drop_watcher(st, old);
    // the join's or position answer told it exactly
    st.sessions[key] = watcher{std::move(s), std::move(u), ticket,
                               told_position{position, position, false, clock::now()}};
    st.due.set(key, clock::time_point::min());
    add_ticket(st, ticket);
    st.view.watch(ticket, position, seq);
    self->maybe_resync(q);
  });
}

void position_notifier::watch_prequeued(std::shared_ptr<session_handle> s, std::string queue,
                                        std::string user) {
  asio::post(strand_, [self = shared_from_this(), s = std::move(s), q = std::move(queue),
                       u = std::move(user)]() mutable {
    auto& st = self->queues_[q];
    auto* key = s.get();
    if (auto old = st.sessions.find(key); old != st.sessions.end()) drop_watcher(st, old);
    st.prequeued.emplace(u, key);
    st.sessions[key] = watcher{std::move(s), std::move(u), 0, {}};
  });
}

void position_notifier::drop_watcher(queue_state& q,
                                     std::map<const session_handle*, watcher>::iterator w) {
  if (w->second.ticket != 0) {
    drop_ticket(q, w->second.ticket);
  } else {
    auto [b, e] = q.prequeued.equal_range(w->second.user);
    for (auto it = b; it != e; ++it)
      if (it->second == w->first) {
        q.prequeued.erase(it);
        break;
      }
  }
  q.due.remove(w->first);
  q.sessions.erase(w);
}

void position_notifier::moved(queue_state& q, long long seq, const queue_event_moved& m) {
  for (std::size_t i = 0; i < m.users.size() && !q.prequeued.empty(); ++i) {
    auto [b, e] = q.prequeued.equal_range(m.users[i]);
    if (b == e) continue;
    const auto ticket = m.ticket + static_cast<long long>(i);
    bool watched = false;
    for (auto it = b; it != e; ++it) {
      auto w = q.sessions.find(it->second);
      if (w == q.sessions.end() || w->second.ticket != 0) continue;
      w->second.ticket = ticket;
      w->second.last = {};
      q.due.set(w->first, clock::time_point::min());
      add_ticket(q, ticket);
      watched = true;
    }
    if (watched) q.view.watch(ticket, m.position + static_cast<long long>(i), seq);
    q.prequeued.erase(b, e);
  }
}

void position_notifier::add_ticket(queue_state& q, long long ticket) {
  ++q.sessions_of[ticket];
}

void position_notifier::drop_ticket(queue_state& q, long long ticket) {
  auto it = q.sessions_of.find(ticket);
  if (it == q.sessions_of.end() || --it->second > 0) return;
  q.sessions_of.erase(it);
  q.view.unwatch(ticket);
}

void position_notifier::unwatch(const session_handle* s, std::string queue) {
  asio::post(strand_, [self = shared_from_this(), s, q = std::move(queue)] {
    auto it = self->queues_.find(q);
    if (it == self->queues_.end()) return;
    auto w = it->second.sessions.find(s);
    if (w == it->second.sessions.end()) return;
    drop_watcher(it->second, w);
  });
}

void position_notifier::unwatch_all(const session_handle* s) {
  asio::post(strand_, [self = shared_from_this(), s] {
    for (auto& [_, q] : self->queues_) {
      auto w = q.sessions.find(s);
      if (w == q.sessions.end()) continue;
      drop_watcher(q, w);
    }
  });
}

void position_notifier::on_wake(std::string payload) {
  asio::post(strand_, [self = shared_from_this(), p = std::move(payload)] {
    auto e = parse_queue_event(p);
    if (!e) return;  // a bare queue name (resources changed): no position moved
    auto& q = self->queues_[e->queue];
    const auto regressions = q.view.counter_regressions();
    const bool moved = q.view.on_event(e->seq, e->removal, e->tickets);
    if (q.view.counter_regressions() != regressions)
      log::warn(
          "positions of queue {}: event {} heard again: the event counter went back "
          "(failover); re-reading",
          e->queue, e->seq);
    if (e->moved && !q.prequeued.empty()) {
      self->moved(q, e->seq, *e->moved);
      self->changed(e->queue);
    }
    if (moved && !q.sessions.empty()) self->changed(e->queue);
    self->maybe_resync(e->queue);
  });
}

void position_notifier::resync_all() {
  asio::post(strand_, [self = shared_from_this()] {
    for (auto& [name, q] : self->queues_) {
      q.view.lost_events();
      self->maybe_resync(name);
    }
  });
}

// On the strand. The queue's positions may have moved: push them when the schedule says.
void position_notifier::changed(const std::string& queue) {
  const auto now = clock::now();
  queues_[queue].last_move = now;
  schedule_.changed(queue, now);
  arm();
}

void position_notifier::arm() {
  auto next = schedule_.next();
  if (!next || (armed_ && *armed_ <= *next)) return;
  armed_ = next;
  timer_.expires_at(*next);  // cancels a later wait
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted) return;  // re-armed earlier
    self->armed_.reset();
    self->push_due();
    self->arm();
  });
}

void position_notifier::push_due() {
  const auto now = clock::now();
  for (const auto& name : schedule_.due(now)) {
    auto it = queues_.find(name);
    if (it == queues_.end()) continue;
    if (!estimates_->fresh(name)) {  // the pace first: one read per queue per second
      asio::co_spawn(strand_, refresh_and_push(name, now), exit_on_exception("position push"));
      continue;
    }
    push(name, it->second, now);
    const auto& v = it->second.view;
    log::debug(
        "positions of queue {}: pushed at event {}: {} sessions, {} tickets ({} not yet known), {} "
        "events held{}",
        name, v.seq(), it->second.sessions.size(), v.watched(), v.pending_count(), v.held_count(),
        v.resyncing() ? ", re-reading" : "");
  }
}

asio::awaitable<void> position_notifier::refresh_and_push(std::string queue,
                                                          clock::time_point now) {
  auto self = shared_from_this();
  std::string q = queue;
  auto call = estimates_->refresh(std::move(q));  // named: GCC 12 and co_await
  co_await std::move(call);
  auto it = queues_.find(queue);
  if (it != queues_.end()) push(queue, it->second, now);
  arm();
}

// Each session of the queue that is due gets its position when it changed since it was
// last told, and is due again one position_gap later (from the queue's pace).
void position_notifier::push(const std::string& queue, queue_state& q, clock::time_point now) {
  const double per_min = estimates_->per_minute(queue);
  const auto interval = schedule_.interval();
  using kind = queue_view::standing::kind;
  for (const session_handle* key : q.due.due(now)) {
    auto w = q.sessions.find(key);
    if (w == q.sessions.end() || w->second.ticket == 0) {  // pre-queued: not due here
      q.due.remove(key);
      continue;
    }
    auto s = w->second.s.lock();
    auto at = q.view.at(w->second.ticket);
    if (!s || at.state == kind::gone) {  // closed, or no longer waiting
      drop_watcher(q, w);
      continue;
    }
    if (at.state == kind::waiting)
      if (auto frame = next_position_frame(w->second.last, at.position, now, approx_after_)) {
        w->second.last = *frame;
        s->deliver(std::make_shared<const std::string>(
            render_position(queue, frame->value, wait_s_at(at.position, per_min), frame->approx)));
      }
    const auto told = w->second.last.exact;
    q.due.set(key, now + position_gap(interval, told, wait_s_at(told, per_min)));
  }
  // Sessions put off may still have a change to be told: wake for them until every
  // session was visited once after the last change.
  const auto longest = std::max<clock::duration>(interval, cadence_max_gap);
  if (auto next = q.due.next(); next && q.last_move && *next <= *q.last_move + longest)
    schedule_.wake_at(queue, *next);
}

void position_notifier::maybe_resync(const std::string& queue) {
  auto it = queues_.find(queue);
  if (it == queues_.end() || !it->second.view.needs_resync()) return;
  if (it->second.sessions.empty()) {
    it->second.view = queue_view{};  // nobody to re-read: the next watch starts afresh
    return;
  }
  asio::co_spawn(strand_, resync(queue), exit_on_exception("position resync"));
}

// Every watched user's position and ticket, in calls of at most reread_chunk users, each
// with the event it is true at (queue_view::resynced puts them together).
asio::awaitable<void> position_notifier::resync(std::string queue) {
  auto self = shared_from_this();
  auto& st = queues_[queue];
  auto asked = st.view.begin_resync();
  std::map<std::string, std::size_t> index;
  std::vector<std::string> users;
  for (auto& [_, w] : st.sessions)
    if (index.emplace(w.user, users.size()).second) users.push_back(w.user);
  std::vector<queue_view::resync_part> parts;
  std::vector<queue_positions::entry> found(users.size());  // by index, for the re-mapping
  std::optional<failure> failed;
  for (auto [b, e] : reread_chunks(users.size(), reread_chunk_)) {
    std::string q = queue;
    std::vector<std::string> some(users.begin() + static_cast<std::ptrdiff_t>(b),
                                  users.begin() + static_cast<std::ptrdiff_t>(e));
    auto call = api_.positions(std::move(q), std::move(some));  // named: GCC 12 and co_await
    auto r = co_await std::move(call);
    if (!r) {
      failed = r.error();
      break;
    }
    if (r.value().users.size() != e - b) {
      failed = failure{errc::internal, "positions: wrong number of users in the reply"};
      break;
    }
    queue_view::resync_part part;
    part.seq = r.value().seq;
    for (std::size_t i = 0; i < e - b; ++i) {
      const auto& u = r.value().users[i];
      found[b + i] = u;
      if (u.position > 0) part.items.push_back({u.ticket, u.position});
    }
    parts.push_back(std::move(part));
  }
  auto it = queues_.find(queue);
  if (it == queues_.end()) co_return;
  auto& now = it->second;
  if (failed) {
    auto delay = reread_backoff_.next();
    log::warn("positions of queue {}: re-read failed: {} {}; again in {} ms", queue, failed->code,
              failed->message, delay.count());
    now.view.resync_failed();
    asio::steady_timer wait(strand_, delay);
    co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
    maybe_resync(queue);
    co_return;
  }
  reread_backoff_.reset();
  // A session whose user waits with another ticket now (left and joined again elsewhere)
  // follows it.
  for (auto& [key, w] : now.sessions) {
    auto i = index.find(w.user);
    if (i == index.end()) continue;
    const auto& e = found[i->second];
    if (auto move = follow_ticket(w.ticket, e.ticket, e.position)) {
      if (move->was_prequeued()) {  // moved at an opening
        auto [b, end] = now.prequeued.equal_range(w.user);
        for (auto p = b; p != end; ++p)
          if (p->second == key) {
            now.prequeued.erase(p);
            break;
          }
        w.last = {};
        now.due.set(key, clock::time_point::min());
      } else {
        --now.sessions_of[w.ticket];  // the view forgets the old ticket in resynced()
        if (now.sessions_of[w.ticket] <= 0) now.sessions_of.erase(w.ticket);
      }
      w.ticket = move->to;
      add_ticket(now, w.ticket);
    }
  }
  now.view.resynced(asked, parts);
  log::info("positions of queue {}: re-read {} users in {} calls at events {}..{} ({} watched)",
            queue, users.size(), parts.size(), parts.empty() ? 0 : parts.front().seq,
            parts.empty() ? 0 : parts.back().seq, now.view.watched());
  changed(queue);
  maybe_resync(queue);
}

}  // namespace pushonce::gateway
