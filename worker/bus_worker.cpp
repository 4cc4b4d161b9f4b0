#include "worker/bus_worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "core/log.hpp"

namespace pushonce::worker {

namespace asio = boost::asio;

bus_worker::bus_worker(asio::any_io_executor ex, redis::connection_options redis, keys k,
                       worker_options opts)
    : ex_(ex),
      keys_(k),
      opts_(std::move(opts)),
      conn_(redis::connection::create(ex, redis)),
      claims_(conn_, k, opts_.claim),
      heartbeat_(conn_, k, "worker", opts_.id, std::chrono::seconds(1),
                 [this] {
                   return std::map<std::string, std::string>{
                       {"won", std::to_string(counters_.won)},
                       {"lost", std::to_string(counters_.lost)},
                       {"delivered", std::to_string(counters_.delivered)}};
                 }),
      trace_(conn_, k, opts_.claim.dedup_window, opts_.trace),
      sweeper_(
          conn_, k,
          sweeper_options{opts_.id, opts_.sweep_interval, opts_.claim.lease,
                          opts_.claim.dedup_window},
          [this](bus_message m) { enqueue(std::move(m), true); },
          [this](const std::string& e, const std::string& raw) { on_malformed(e, raw); }) {
  bus_ = redis::subscriber::create(ex, redis, [this](const std::string&, std::string payload) {
    asio::post(ex_, [this, p = std::move(payload)]() mutable { on_bus_message(std::move(p)); });
  });
}

void bus_worker::start() {
  conn_->start();
  bus_->start();
  asio::co_spawn(
      ex_,
      [this]() -> asio::awaitable<void> {
        auto ec = co_await bus_->subscribe(keys_.bus_channel());
        if (ec)
          log::warn("bus subscription not confirmed yet: {}", ec.message());
        else
          log::info("worker {} listening on {}", opts_.id, keys_.bus_channel());
      },
      asio::detached);
  asio::co_spawn(ex_, heartbeat_.run(), asio::detached);
  asio::co_spawn(ex_, flush_stats_loop(), asio::detached);
  asio::co_spawn(ex_, sweeper_.run(), asio::detached);
}

void bus_worker::on_bus_message(std::string payload) {
  if (stopping_) return;
  ++counters_.received;
  std::string why;
  auto m = parse_bus_message(payload, &why);
  if (!m) {
    ++counters_.failed;
    log::warn("ignoring malformed bus message ({}): {:.200}", why, payload);
    return;
  }
  enqueue(std::move(*m), false);
}

void bus_worker::enqueue(bus_message m, bool redrive) {
  if (stopping_) return;
  if (queued_.size() >= opts_.max_queued) {
    // Still in the outbox: the recovery sweeper re-drives it.
    ++counters_.dropped;
    if (counters_.dropped % 1000 == 1) log::warn("worker saturated; dropping bus message {}", m.id);
    return;
  }
  queued_.push_back(job{std::move(m), redrive});
  pump();
}

void bus_worker::on_malformed(const std::string& entry_id, const std::string& raw) {
  log::warn("outbox entry {} is not a bus message; dead-lettered: {:.200}", entry_id, raw);
  ++counters_.dead_lettered;
  conn_->async_exec(
      redis::command{"XADD", keys_.plain("dead-letters"), "MAXLEN", "~", "10000", "*", "id", "",
                     "user", "", "src", "", "reason", "malformed", "attempts", "0", "m", raw},
      asio::detached);
}

void bus_worker::pump() {
  while (!stopping_ && inflight_ < opts_.concurrency && !queued_.empty()) {
    ++inflight_;
    auto j = std::move(queued_.front());
    queued_.pop_front();
    asio::co_spawn(ex_, process(std::move(j)), asio::detached);
  }
}

std::string bus_worker::next_owner() {
  return opts_.id + ":" + std::to_string(++owner_seq_);
}

asio::awaitable<void> bus_worker::process(job j) {
  const auto& m = j.m;
  auto owner = next_owner();
  auto claimed = co_await claims_.claim(m, owner);
  if (!claimed) {
    ++counters_.failed;
    log::warn("claim of {} failed: {} {}", m.id, claimed.error().code, claimed.error().message);
  } else {
    auto state = claimed.value().state;
    static constexpr const char* names[] = {"won", "taken", "done", "dead"};
    trace_.record(m.id, {{"event", j.redrive ? "reclaimed" : "claimed"},
                         {"worker", opts_.id},
                         {"outcome", names[static_cast<int>(state)]}});
    if (state == claim_state::won) {
      ++counters_.won;
      leased_[m.id] = {m, owner};
      co_await deliver_won(j, owner, claimed.value().attempts);
      leased_.erase(m.id);
    } else if (state != claim_state::dead) {
      ++counters_.lost;
    }
  }
  --inflight_;
  pump();
}

asio::awaitable<void> bus_worker::deliver_won(const job& j, const std::string& owner,
                                              long long attempts) {
  const auto& m = j.m;
  if (attempts > opts_.max_attempts) {
    auto reason = "not delivered after " + std::to_string(attempts - 1) + " attempts";
    auto dead = co_await claims_.dead_letter(m, owner, reason, attempts - 1);
    if (dead && dead.value()) {
      ++counters_.dead_lettered;
      trace_.record(m.id, {{"event", "dead_lettered"}, {"worker", opts_.id}, {"reason", reason}});
      log::warn("message {} to {} dead-lettered: {}", m.id, m.user, reason);
    }
    co_return;
  }
  auto delivered = co_await claims_.deliver(m, owner);
  if (delivered) {
    ++counters_.delivered;
    bool again = j.redrive || attempts > 1;
    if (again) ++counters_.redelivered;
    trace_.record(m.id, {{"event", again ? "redelivered" : "delivered"},
                         {"worker", opts_.id},
                         {"offset", delivered.value()},
                         {"attempt", attempts}});
    log::debug("delivered {} to {} at offset {}", m.id, m.user, delivered.value());
  } else if (delivered.error().code == "fenced") {
    ++counters_.fenced;
    log::warn("lease on {} lost before delivery; another worker takes it", m.id);
  } else {
    ++counters_.failed;
    log::warn("deliver of {} failed: {} {}", m.id, delivered.error().code,
              delivered.error().message);
  }
}

asio::awaitable<void> bus_worker::flush_stats() {
  auto now = counters_;
  auto stats = keys_.plain("stats");
  std::vector<redis::command> cmds;
  auto add = [&](const char* name, std::uint64_t current, std::uint64_t done) {
    if (current > done) cmds.push_back({"HINCRBY", stats, name, std::to_string(current - done)});
  };
  add("delivered", now.delivered, flushed_.delivered);
  add("duplicates_suppressed", now.lost, flushed_.lost);
  add("redelivered", now.redelivered, flushed_.redelivered);
  add("dead_lettered", now.dead_lettered, flushed_.dead_lettered);
  if (cmds.empty()) co_return;
  auto rs = co_await conn_->exec_all(std::move(cmds));
  // Counters are statistics: on failure the difference is added next time.
  for (auto& r : rs)
    if (!r.ok()) co_return;
  flushed_ = now;
}

asio::awaitable<void> bus_worker::flush_stats_loop() {
  asio::steady_timer timer(ex_);
  while (!stopping_) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(asio::use_awaitable);
    co_await flush_stats();
  }
}

asio::awaitable<void> bus_worker::stop(std::chrono::milliseconds drain) {
  stopping_ = true;
  bus_->stop();
  heartbeat_.stop();
  sweeper_.stop();
  queued_.clear();  // not claimed yet: other workers (or the sweeper) take them
  asio::steady_timer timer(ex_);
  auto deadline = std::chrono::steady_clock::now() + drain;
  while (inflight_ > 0 && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(asio::use_awaitable);
  }
  if (inflight_ > 0) log::warn("stopping with {} messages in flight", inflight_);
  // Leases still held are handed back so another worker takes them now, not after the lease.
  auto held = leased_;
  for (auto& [id, lease] : held) {
    if (co_await claims_.release(lease.first, lease.second))
      log::info("handed back the lease on message {}", id);
  }
  co_await flush_stats();
  co_await heartbeat_.remove();
  conn_->stop();
}

}  // namespace pushonce::worker
