#include "worker/bus_worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

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
      heartbeat_(conn_, k, "worker", opts_.id, std::chrono::seconds(1), [this] {
        return std::map<std::string, std::string>{
            {"won", std::to_string(counters_.won)},
            {"lost", std::to_string(counters_.lost)},
            {"delivered", std::to_string(counters_.delivered)}};
      }) {
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
        if (ec) log::warn("bus subscription not confirmed yet: {}", ec.message());
        else log::info("worker {} listening on {}", opts_.id, keys_.bus_channel());
      },
      asio::detached);
  asio::co_spawn(ex_, heartbeat_.run(), asio::detached);
  asio::co_spawn(ex_, flush_stats_loop(), asio::detached);
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
  if (queued_.size() >= opts_.max_queued) {
    // Still in the outbox: the recovery sweeper re-drives it.
    ++counters_.dropped;
    if (counters_.dropped % 1000 == 1) log::warn("worker saturated; dropping bus message {}", m->id);
    return;
  }
  queued_.push_back(std::move(*m));
  pump();
}

void bus_worker::pump() {
  while (!stopping_ && inflight_ < opts_.concurrency && !queued_.empty()) {
    ++inflight_;
    auto m = std::move(queued_.front());
    queued_.pop_front();
    asio::co_spawn(ex_, process(std::move(m)), asio::detached);
  }
}

std::string bus_worker::next_owner() { return opts_.id + ":" + std::to_string(++owner_seq_); }

asio::awaitable<void> bus_worker::process(bus_message m) {
  auto owner = next_owner();
  auto claimed = co_await claims_.claim(m, owner);
  if (!claimed) {
    ++counters_.failed;
    log::warn("claim of {} failed: {} {}", m.id, claimed.error().code, claimed.error().message);
  } else if (claimed.value().state != claim_state::won) {
    ++counters_.lost;
    log::debug("message {} {} elsewhere", m.id,
               claimed.value().state == claim_state::done ? "delivered" : "taken");
  } else {
    ++counters_.won;
    auto delivered = co_await claims_.deliver(m, owner);
    if (delivered) {
      ++counters_.delivered;
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
  --inflight_;
  pump();
}

asio::awaitable<void> bus_worker::flush_stats() {
  auto d = counters_.delivered - flushed_delivered_;
  auto l = counters_.lost - flushed_lost_;
  if (d == 0 && l == 0) co_return;
  std::vector<redis::command> cmds;
  if (d) cmds.push_back({"HINCRBY", keys_.plain("stats"), "delivered", std::to_string(d)});
  if (l) cmds.push_back({"HINCRBY", keys_.plain("stats"), "duplicates_suppressed", std::to_string(l)});
  flushed_delivered_ += d;
  flushed_lost_ += l;
  auto rs = co_await conn_->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) {
      // Counters are statistics: retry the difference next time.
      flushed_delivered_ -= d;
      flushed_lost_ -= l;
      break;
    }
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
  queued_.clear();  // not claimed yet: other workers (or the sweeper) take them
  asio::steady_timer timer(ex_);
  auto deadline = std::chrono::steady_clock::now() + drain;
  while (inflight_ > 0 && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(asio::use_awaitable);
  }
  if (inflight_ > 0) log::warn("stopping with {} messages in flight", inflight_);
  co_await flush_stats();
  co_await heartbeat_.remove();
  conn_->stop();
}

}  // namespace pushonce::worker
