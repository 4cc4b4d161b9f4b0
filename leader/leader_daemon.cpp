#include "leader/leader_daemon.hpp"

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/redis/scripts.hpp"
#include "core/trace.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

leader_daemon::leader_daemon(asio::any_io_executor ex, redis::connection_options redis, keys k,
                             daemon_options opts)
    : ex_(ex),
      keys_(k),
      opts_(std::move(opts)),
      conn_(redis::connection::create(ex, redis)),
      queues_(conn_, k),
      wake_timer_(ex),
      lease_timer_(ex) {
  sub_ = redis::subscriber::create(ex, redis, [this](const std::string& ch, std::string p) {
    asio::post(ex_, [this, ch, p = std::move(p)] { on_wake(ch, p); });
  });
}

void leader_daemon::start() {
  conn_->start();
  sub_->start();
  // After a reconnect wake messages may have been missed: look at every queue.
  sub_->on_connect([this] {
    asio::post(ex_, [this] {
      dirty_.insert(opts_.queues.begin(), opts_.queues.end());
      wake_timer_.cancel();
    });
  });
  asio::co_spawn(
      ex_,
      [this]() -> asio::awaitable<void> {
        auto wake = keys_.wake_channel();
        auto released = keys_.plain("leader:released");
        co_await sub_->subscribe(std::move(wake));
        co_await sub_->subscribe(std::move(released));
      },
      asio::detached);
  asio::co_spawn(ex_, lease_loop(), asio::detached);
  asio::co_spawn(ex_, assign_loop(), asio::detached);
  asio::co_spawn(ex_, expire_loop(), asio::detached);
}

void leader_daemon::on_wake(const std::string& channel, const std::string& payload) {
  if (channel == keys_.wake_channel()) {
    for (auto& q : opts_.queues)
      if (q == payload) dirty_.insert(q);
    wake_timer_.cancel();
  } else if (!leading()) {
    lease_timer_.cancel();  // the lease was released: try to take it now
  }
}

asio::awaitable<long long> leader_daemon::lease_call(std::string mode) {
  std::vector<std::string> k{keys_.plain("leader"), keys_.plain("leader:fencing")};
  std::vector<std::string> a{std::move(mode),
                             opts_.id,
                             std::to_string(getpid()),
                             heartbeat::hostname(),
                             std::to_string(opts_.lease.count()),
                             keys_.plain("leader:released")};
  const auto& s = redis::get_script("leader_lease");
  auto r = co_await redis::eval(*conn_, s, std::move(k), std::move(a));
  if (!r.ok()) co_return -1;
  co_return r.value.integer;
}

void leader_daemon::become_leader(long long token) {
  token_ = token;
  log::info("leading with fencing token {} (queues: {})", token, fmt::join(opts_.queues, ", "));
  dirty_.insert(opts_.queues.begin(), opts_.queues.end());
  wake_timer_.cancel();
}

void leader_daemon::step_down(const char* why) {
  if (!token_) return;
  log::warn("no longer leading: {}", why);
  token_ = 0;
  sources_.clear();
}

// Renews every third of the lease; a renewal that fails for longer than the lease means
// the lease may have passed to another leader, so assigning stops at once.
asio::awaitable<void> leader_daemon::lease_loop() {
  auto last_ok = std::chrono::steady_clock::now();
  while (!stopping_) {
    auto token = co_await lease_call(leading() ? "renew" : "acquire");
    if (stopping_) break;
    if (token > 0) {
      last_ok = std::chrono::steady_clock::now();
      if (!leading())
        become_leader(token);
      else if (token != token_)
        become_leader(token);
    } else if (token == 0) {
      step_down("the lease is held by another leader");
    } else if (leading() && std::chrono::steady_clock::now() - last_ok > opts_.lease * 2 / 3) {
      step_down("cannot renew the lease (Redis unreachable)");
    }
    lease_timer_.expires_after(opts_.lease / 3);
    co_await lease_timer_.async_wait(use_tuple);
  }
}

asio::awaitable<bool> leader_daemon::ensure_source(const std::string& queue) {
  if (sources_.count(queue)) co_return true;
  auto idx = co_await queues_.source_index(queue);
  if (!idx) {
    log::warn("queue {}: no source index: {}", queue, idx.error().message);
    co_return false;
  }
  sources_[queue] = idx.value();
  co_return true;
}

// Assignments past their accept deadline expire here (their resource goes back to the
// free list and the assigner hands it on). Runs whatever this leader's own
// --accept-timeout is: an earlier leader may have set deadlines.
asio::awaitable<void> leader_daemon::expire_loop() {
  asio::steady_timer timer(ex_);
  while (!stopping_) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(use_tuple);
    if (!leading()) continue;
    for (const auto& queue : opts_.queues) {
      if (!co_await ensure_source(queue)) continue;
      for (int i = 0; i < 1000 && leading(); ++i) {
        auto r = co_await queues_.expire_one(queue, sources_[queue], token_);
        if (!r) {
          if (r.error().code == "fenced") step_down("a newer leader has acted on this queue");
          break;
        }
        if (!r.value()) break;
        tracer(conn_, keys_)
            .record(r.value()->id, {{"event", "published"},
                                    {"kind", "expired"},
                                    {"queue", queue},
                                    {"user", r.value()->user},
                                    {"resource", r.value()->resource}});
        log::info("queue {}: assignment of {} to {} expired", queue, r.value()->resource,
                  r.value()->user);
        redis::command stat{"HINCRBY", keys_.plain("stats"), "published", "1"};
        co_await conn_->exec(std::move(stat));
        dirty_.insert(queue);
        wake_timer_.cancel();
      }
    }
  }
}

asio::awaitable<void> leader_daemon::assign_queue(const std::string& queue) {
  if (!co_await ensure_source(queue)) {
    dirty_.insert(queue);
    co_return;
  }
  auto source = sources_[queue];
  long long n = 0;
  // Bounded rounds so one busy queue cannot starve the others or the lease renewal.
  for (int i = 0; i < 1000 && leading() && !stopping_; ++i) {
    auto r = co_await queues_.assign_one(queue, source, token_, opts_.accept_timeout.count());
    if (!r) {
      if (r.error().code == "fenced") {
        step_down("a newer leader has assigned on this queue");
      } else {
        log::warn("queue {}: assign failed: {} {}", queue, r.error().code, r.error().message);
        dirty_.insert(queue);
      }
      break;
    }
    if (!r.value()) break;
    ++n;
    tracer(conn_, keys_)
        .record(r.value()->id, {{"event", "published"},
                                {"kind", "assignment"},
                                {"queue", queue},
                                {"user", r.value()->user},
                                {"resource", r.value()->resource},
                                {"leader", opts_.id}});
    log::debug("queue {}: assigned {} to {} (message {})", queue, r.value()->resource,
               r.value()->user, r.value()->id);
    if (i == 999) dirty_.insert(queue);
  }
  if (n > 0) {
    assigned_ += n;
    redis::command stat{"HINCRBY", keys_.plain("stats"), "published", std::to_string(n)};
    co_await conn_->exec(std::move(stat));
  }
}

asio::awaitable<void> leader_daemon::assign_loop() {
  while (!stopping_) {
    if (dirty_.empty()) {
      wake_timer_.expires_after(opts_.tick);
      auto [ec] = co_await wake_timer_.async_wait(use_tuple);
      if (stopping_) break;
      if (!ec) dirty_.insert(opts_.queues.begin(), opts_.queues.end());  // the tick
    }
    if (!leading()) {
      dirty_.clear();
      continue;
    }
    auto todo = std::move(dirty_);
    dirty_.clear();
    for (const auto& q : todo) co_await assign_queue(q);
  }
}

asio::awaitable<void> leader_daemon::stop() {
  stopping_ = true;
  wake_timer_.cancel();
  lease_timer_.cancel();
  if (leading()) {
    auto released = co_await lease_call("release");
    log::info("lease {}", released == 1 ? "released" : "was no longer ours");
    token_ = 0;
  }
  sub_->stop();
  conn_->stop();
}

}  // namespace pushonce::leader
