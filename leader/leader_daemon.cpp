#include "leader/leader_daemon.hpp"

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>

#include "core/exit_on_exception.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/metrics_text.hpp"
#include "core/redis/scripts.hpp"
#include "core/trace.hpp"
#include "core/use_tuple.hpp"
#include "leader/queue_list.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

leader_daemon::leader_daemon(asio::any_io_executor ex, redis::connection_options redis, keys k,
                             daemon_options opts)
    : ex_(ex),
      keys_(k),
      opts_(std::move(opts)),
      conn_(redis::connection::create(ex, redis)),
      queues_(conn_, k, opts_.retention),
      wake_timer_(ex),
      lease_timer_(ex),
      lease_(opts_.lease, std::chrono::steady_clock::now()) {
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
      exit_on_exception("leader subscriptions"));
  asio::co_spawn(ex_, lease_loop(), exit_on_exception("leader lease loop"));
  asio::co_spawn(ex_, assign_loop(), exit_on_exception("leader assign loop"));
  asio::co_spawn(ex_, expire_loop(), exit_on_exception("leader expire loop"));
}

void leader_daemon::on_wake(const std::string& channel, const std::string& payload) {
  if (channel == keys_.wake_channel()) {
    // "QUEUE" or a queue event "QUEUE SEQ KIND TICKET..." (lua/lib/prelude.lua).
    auto queue = std::string_view(payload).substr(0, payload.find(' '));
    for (auto& q : opts_.queues)
      if (q == queue) dirty_.insert(q);
    wake_timer_.cancel();
  } else if (!leading()) {
    lease_timer_.cancel();  // the lease was released: try to take it now
  }
}

namespace {
const char* mode_word(lease_call mode) {
  switch (mode) {
    case lease_call::acquire:
      return "acquire";
    case lease_call::renew:
      return "renew";
    case lease_call::release:
      return "release";
  }
  return "acquire";
}
}  // namespace

asio::awaitable<lease_reply> leader_daemon::call_lease(lease_call mode) {
  std::vector<std::string> k{keys_.plain("leader"), keys_.leader_fencing(conn_->is_cluster())};
  std::vector<std::string> a{mode_word(mode),
                             opts_.id,
                             std::to_string(getpid()),
                             heartbeat::hostname(),
                             std::to_string(opts_.lease.count()),
                             keys_.plain("leader:released")};
  const auto& s = redis::get_script("leader_lease");
  auto r = co_await redis::eval(*conn_, s, std::move(k), std::move(a));
  co_return lease_reply::from(r);
}

// Carries out a lease decision (leader/lease_state.hpp decides).
void leader_daemon::apply(lease_action action) {
  switch (action) {
    case lease_action::lead:
      log::info("leading with fencing token {} (queues: {})", lease_.token(),
                fmt::join(opts_.queues, ", "));
      dirty_.insert(opts_.queues.begin(), opts_.queues.end());
      wake_timer_.cancel();
      break;
    case lease_action::step_down:
      log::warn("no longer leading: {}", lease_.why());
      sources_.clear();
      break;
    case lease_action::hold:
    case lease_action::standby:
      break;
  }
}

void leader_daemon::fenced(std::string_view why) {
  apply(lease_.on_fenced(why));
}

// Renews every third of the lease; lease_state decides when to lead and step down.
asio::awaitable<void> leader_daemon::lease_loop() {
  while (!stopping_) {
    // Every leader, standbys included, registers its queues: users can join them from now on.
    if (!registered_) {
      auto reg = co_await queues_.register_queues(opts_.queues);
      registered_ = reg.has_value();
      if (!registered_) log::warn("cannot register queues yet: {}", reg.error().message);
    }
    co_await check_queue_list();
    if (stopping_) break;
    auto reply = co_await call_lease(lease_.next_call());
    if (stopping_) break;
    apply(lease_.on_reply(reply, std::chrono::steady_clock::now()));
    lease_timer_.expires_at(lease_.next_wake());
    co_await lease_timer_.async_wait(use_tuple);
  }
}

// Every third of a lease: does the namespace have a queue this leader would not serve?
asio::awaitable<void> leader_daemon::check_queue_list() {
  if (!registered_ || !on_queue_conflict_) co_return;
  redis::command cmd{"SMEMBERS", keys_.plain("queues")};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok() || r.value.elements.empty()) co_return;  // Redis away: the next round checks
  std::vector<std::string> registered;
  for (auto& e : r.value.elements) registered.push_back(e.str);
  auto missing = queues_missing_from(opts_.queues, std::move(registered));
  if (missing.empty()) co_return;
  auto fn = std::move(on_queue_conflict_);
  on_queue_conflict_ = nullptr;
  fn(fmt::format(
      "queue list conflict: the namespace's queues include {} (registered by another leader), "
      "which this leader's --queue list ({}) lacks: after a failover to it they would stall. Give "
      "every leader the same --queue list (or remove a retired queue with SREM {} NAME)",
      fmt::join(missing, ", "), fmt::join(opts_.queues, ","), keys_.plain("queues")));
}

asio::awaitable<std::string> leader_daemon::metrics_text() {
  const std::string own = "leader=\"" + metric_label_value(opts_.id) + "\"";
  std::string out;
  out += metric_text("pushonce_leader_active", "gauge",
                     "1 while this leader holds the lease (assigns), 0 while it stands by.", own,
                     leading() ? 1 : 0);
  out += metric_text("pushonce_leader_fencing_token", "gauge",
                     "The fencing token of this leader's lease (0 while it stands by).", own,
                     static_cast<double>(lease_.token()));
  out += metric_text("pushonce_leader_assignments_total", "counter",
                     "Assignments this leader made since it started.", own,
                     static_cast<double>(assigned_));
  if (!leading()) co_return out;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const auto since = std::to_string(now - 3000);
  std::vector<redis::command> cmds{{"HGETALL", keys_.plain("stats")},
                                   {"ZCOUNT", keys_.plain("workers"), since, "+inf"},
                                   {"ZCOUNT", keys_.plain("gateways"), since, "+inf"},
                                   {"XLEN", keys_.plain("dead-letters")}};
  auto rs = co_await conn_->exec_all(std::move(cmds));
  const std::string ns = "namespace=\"" + metric_label_value(keys_.ns()) + "\"";
  out += metric_text("pushonce_redis_up", "gauge", "1 when Redis answered this scrape.", own,
                     rs[0].ok() ? 1 : 0);
  if (!rs[0].ok()) co_return out;
  std::vector<std::pair<std::string, std::string>> stats;
  for (std::size_t i = 0; i + 1 < rs[0].value.elements.size(); i += 2)
    stats.emplace_back(rs[0].value.elements[i].str, rs[0].value.elements[i + 1].str);
  out += system_counters_text(stats, ns);
  auto count = [](const redis::result& r) {
    return r.ok() ? static_cast<double>(r.value.integer) : 0.0;
  };
  out += metric_text("pushonce_workers_alive", "gauge",
                     "Workers whose heartbeat was seen in the last 3 s.", ns, count(rs[1]));
  out += metric_text("pushonce_gateways_alive", "gauge",
                     "Gateways whose heartbeat was seen in the last 3 s.", ns, count(rs[2]));
  out += metric_text("pushonce_dead_letters", "gauge",
                     "Entries in the dead-letter stream (list, replay or purge them).", ns,
                     count(rs[3]));
  // Sweeper lag per outbox (this leader's queues, every bus shard): the age of the oldest
  // entry after the sweep cursor, 0 when none. A few leases at most while the sweepers keep
  // up; it grows while no worker sweeps.
  struct lag_outbox {
    std::string label, stream, cursor;
  };
  std::vector<lag_outbox> outboxes;
  for (const auto& q : opts_.queues)
    outboxes.push_back({"q:" + q, keys_.queue(q, "outbox"), keys_.queue(q, "sweep")});
  for (unsigned n = 0; n < keys_.shards(); ++n)
    outboxes.push_back({"bus:" + std::to_string(n), keys_.bus(n, "outbox"), keys_.bus(n, "sweep")});
  std::vector<redis::command> cursors;
  for (const auto& o : outboxes) cursors.push_back({"GET", o.cursor});
  auto cs = co_await conn_->exec_all(std::move(cursors));
  std::vector<redis::command> oldest;
  for (std::size_t i = 0; i < outboxes.size(); ++i) {
    std::string from = cs[i].ok() && !cs[i].value.is_nil() ? "(" + cs[i].value.str : "-";
    oldest.push_back({"XRANGE", outboxes[i].stream, from, "+", "COUNT", "1"});
  }
  auto os = co_await conn_->exec_all(std::move(oldest));
  out +=
      "# HELP pushonce_sweeper_lag_seconds Age of the oldest outbox entry the sweepers have "
      "not passed yet (0: none).\n# TYPE pushonce_sweeper_lag_seconds gauge\n";
  for (std::size_t i = 0; i < outboxes.size(); ++i) {
    double lag = 0;
    if (os[i].ok() && !os[i].value.elements.empty()) {
      const auto& id = os[i].value.elements[0].elements.empty()
                           ? os[i].value.elements[0].str
                           : os[i].value.elements[0].elements[0].str;
      long long ms = std::atoll(id.c_str());
      if (ms > 0 && now > ms) lag = static_cast<double>(now - ms) / 1000.0;
    }
    out += fmt::format("pushonce_sweeper_lag_seconds{{{},outbox=\"{}\"}} {}\n", ns,
                       metric_label_value(outboxes[i].label), lag);
  }
  co_return out;
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

// Trace events and the published count of a batch, pipelined and not awaited: tracing
// never slows the assigner.
void leader_daemon::record(const std::string& queue, const std::vector<assignment>& batch,
                           const char* kind) {
  tracer trace(conn_, keys_);
  for (const auto& a : batch) {
    trace.record(a.id, {{"event", "published"},
                        {"kind", kind},
                        {"queue", queue},
                        {"user", a.user},
                        {"resource", a.resource},
                        {"leader", opts_.id}});
    if (log::current_level() <= log::level::debug)
      log::debug(log::fields{{"message_id", a.id}, {"user", a.user}}, "queue {}: {} {} to {}",
                 queue, kind, a.resource, a.user);
  }
  conn_->async_exec(
      redis::command{"HINCRBY", keys_.plain("stats"), "published", std::to_string(batch.size())},
      asio::detached);
}

// Assignments past their accept deadline expire here (their resource goes back to the
// free list and the assigner hands it on), a batch per call. Runs whatever this leader's
// own --accept-timeout is: an earlier leader may have set deadlines.
asio::awaitable<void> leader_daemon::expire_loop() {
  asio::steady_timer timer(ex_);
  while (!stopping_) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(use_tuple);
    if (!leading()) continue;
    for (const auto& queue : opts_.queues) {
      if (!co_await ensure_source(queue)) continue;
      for (int i = 0; i < 100 && leading(); ++i) {
        auto r = co_await queues_.expire_batch(queue, sources_[queue], lease_.token(), opts_.batch);
        if (!r) {
          if (r.error().code == errc::fenced) fenced("a newer leader has acted on this queue");
          break;
        }
        if (r.value().empty()) break;
        record(queue, r.value(), "expired");
        log::info("queue {}: {} assignments expired", queue, r.value().size());
        dirty_.insert(queue);
        wake_timer_.cancel();
        if (static_cast<long long>(r.value().size()) < opts_.batch) break;
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
  // Bounded rounds so one busy queue cannot starve the others or the lease renewal.
  for (int i = 0; i < 100 && leading() && !stopping_; ++i) {
    auto r = co_await queues_.assign_batch(queue, source, lease_.token(),
                                           opts_.accept_timeout.count(), opts_.batch);
    if (!r) {
      if (r.error().code == errc::fenced) {
        fenced("a newer leader has assigned on this queue");
      } else {
        log::warn("queue {}: assign failed: {} {}", queue, r.error().code, r.error().message);
        dirty_.insert(queue);
      }
      break;
    }
    if (r.value().empty()) break;
    assigned_ += r.value().size();
    record(queue, r.value(), "assignment");
    // A short batch: nobody else waits or nothing else is free (or stale heads were
    // dropped; the script's own wake brings us back then).
    if (static_cast<long long>(r.value().size()) < opts_.batch) break;
    if (i == 99) dirty_.insert(queue);
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
  if (lease_.on_stop()) {
    auto released = co_await call_lease(lease_call::release);
    log::info("lease {}", released.what == lease_reply::kind::token && released.token == 1
                              ? "released"
                              : "was no longer ours");
  }
  sub_->stop();
  conn_->stop();
}

}  // namespace pushonce::leader
