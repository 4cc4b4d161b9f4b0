#include "worker/bus_worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "core/dead_letter_entry.hpp"
#include "core/exit_on_exception.hpp"
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
                       {"delivered", std::to_string(counters_.delivered)},
                       {"bus_shards", std::to_string(keys_.shards())}};
                 }),
      trace_(conn_, k, opts_.claim.dedup_window, opts_.trace),
      sweeper_(
          conn_, k,
          sweeper_options{opts_.id, opts_.sweep_interval, opts_.claim.lease,
                          opts_.claim.dedup_window},
          [this](std::vector<bus_message> ms) {
            return claim_all(std::move(ms), claim_path::redrive);
          },
          [this](const std::string& e, const std::string& raw) { on_malformed(e, raw); }),
      backlog_(opts_.max_queued, opts_.max_queued_bytes) {
  auto on_payload = [this](const std::string&, std::string payload) {
    asio::post(ex_, [this, p = std::move(payload)]() mutable { on_bus_message(std::move(p)); });
  };
  bus_ = redis::subscriber::create(ex, redis, on_payload);
  // What was published while a channel was not heard is caught up on as soon as it is heard
  // again; the regular sweep would take it only a lease later.
  bus_->on_lost([this](clock_type::time_point heard_until) {
    asio::post(ex_, [this, heard_until] {
      if (!bus_deaf_since_ || heard_until < *bus_deaf_since_) bus_deaf_since_ = heard_until;
    });
  });
  bus_->on_connect([this] {
    asio::post(ex_, [this, now = clock_type::now()] {
      bus_connected_at_ = now;
      if (!bus_deaf_since_ || stopping_) return;
      auto since = *bus_deaf_since_;
      bus_deaf_since_.reset();
      asio::co_spawn(ex_, sweeper_.catch_up_bus(since, now), exit_on_exception("bus catch-up"));
    });
  });
  // A channel Redis refused to subscribe (ACL) and confirmed on a retry was not heard since
  // the connect: catch up on that time too.
  bus_->on_resubscribed([this](const std::string&) {
    asio::post(ex_, [this, now = clock_type::now()] {
      if (stopping_) return;
      asio::co_spawn(ex_, sweeper_.catch_up_bus(bus_connected_at_, now),
                     exit_on_exception("bus catch-up"));
    });
  });
  if (!redis.cluster.empty()) {
    shard_bus_ = redis::sharded_subscriber::create(ex, redis, conn_, on_payload);
    shard_bus_->on_resubscribed([this](const std::string& ch, clock_type::time_point since) {
      asio::post(ex_, [this, ch, since, now = clock_type::now()] {
        on_shard_heard_again(ch, since, now);
      });
    });
  }
}

void bus_worker::on_shard_heard_again(const std::string& channel, clock_type::time_point deaf_since,
                                      clock_type::time_point heard_again) {
  if (stopping_) return;
  for (unsigned n = 0; n < keys_.shards(); ++n)
    if (keys_.bus_channel(n) == channel)
      asio::co_spawn(ex_, sweeper_.catch_up_shard(n, deaf_since, heard_again),
                     exit_on_exception("bus shard catch-up"));
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
      exit_on_exception("worker bus subscription"));
  if (shard_bus_) {
    shard_bus_->start();
    asio::co_spawn(
        ex_,
        [this]() -> asio::awaitable<void> {
          for (unsigned n = 0; n < keys_.shards(); ++n) {
            auto channel = keys_.bus_channel(n);
            auto ec = co_await shard_bus_->subscribe(std::move(channel));
            if (ec) log::warn("bus shard {} subscription not confirmed yet: {}", n, ec.message());
          }
          log::info("worker {} listening on {} sharded bus channels", opts_.id, keys_.shards());
        },
        exit_on_exception("worker bus shard subscriptions"));
  }
  asio::co_spawn(ex_, heartbeat_.run(), exit_on_exception("worker heartbeat"));
  asio::co_spawn(ex_, flush_stats_loop(), exit_on_exception("worker stats flush"));
  asio::co_spawn(ex_, sweeper_.run(), exit_on_exception("sweeper"));
}

void bus_worker::on_bus_message(std::string payload) {
  if (stopping_) return;
  auto n = split_bus_payload(payload).size();
  counters_.received += n;
  if (n == 0) return;
  if (!backlog_.admit(n, payload.size())) {
    // Still in the outbox: the recovery sweeper re-drives them.
    auto before = counters_.dropped;
    counters_.dropped += n;
    if (before / 1000 != counters_.dropped / 1000 || before == 0)
      log::warn("worker saturated; {} bus messages dropped so far", counters_.dropped);
    return;
  }
  queued_.emplace_back(std::move(payload), n);
  pump();
}

void bus_worker::on_malformed(const std::string& entry_id, const std::string& raw) {
  log::warn("outbox entry {} is not a bus message; dead-lettered: {:.200}", entry_id, raw);
  ++counters_.dead_lettered;
  asio::co_spawn(ex_, add_malformed(raw), asio::detached);
}

asio::awaitable<void> bus_worker::add_malformed(std::string raw) {
  auto add = dead_letter_entry(keys_, "", "", "", "malformed", 0, raw);
  auto r = co_await lua::run_script(*conn_, std::move(add));
  if (r.ok())
    counters_.dead_letters_trimmed +=
        static_cast<std::uint64_t>(parse_dead_letter_entry_reply(r.value).value_or(0));
}

void bus_worker::pump() {
  while (!stopping_ && inflight_ < opts_.concurrency && !queued_.empty()) {
    ++inflight_;
    auto [payload, n] = std::move(queued_.front());
    queued_.pop_front();
    backlog_.release(n, payload.size());
    asio::co_spawn(ex_, process(std::move(payload)), exit_on_exception("worker batch"));
  }
}

std::string bus_worker::next_owner() {
  return opts_.id + ":" + std::to_string(++owner_seq_);
}

asio::awaitable<void> bus_worker::process(std::string payload) {
  auto lines = split_bus_payload(payload);
  // A payload claimed in one call races before its lines are parsed: a worker that loses
  // only counts them (the first line's id names the race).
  auto first = race_whole_payload(lines, opts_.max_batch, opts_.trace);
  if (!first) {
    co_await claim_all(parse(lines), claim_path::heard);
  } else if (auto owner = next_owner();
             claims_after(co_await race(first->id, lines.size(), owner))) {
    co_await claim_all(parse(lines), claim_path::raced, std::move(owner));
  } else {
    counters_ += lost_race(lines.size());  // another worker holds the batch: "taken"
  }
  --inflight_;
  pump();
}

std::vector<bus_message> bus_worker::parse(std::span<const std::string_view> lines) {
  auto parsed = parse_lines(lines);
  for (const auto& [why, line] : parsed.malformed)
    log::warn("ignoring malformed bus message ({}): {:.200}", why, line);
  counters_ += parsed.tally;
  return std::move(parsed.messages);
}

asio::awaitable<race_result> bus_worker::race(const std::string& first_id, std::size_t messages,
                                              const std::string& owner) {
  auto won = co_await claims_.claim_batch(first_id, owner);
  if (won) co_return won.value() ? race_result::won : race_result::lost;
  log::warn("race for a batch of {} messages failed: {} {}; claiming them anyway", messages,
            won.error().code, won.error().message);
  co_return race_result::failed;
}

asio::awaitable<bus_worker::outcomes> bus_worker::claim_all(std::vector<bus_message> batch,
                                                            claim_path path, std::string owner) {
  outcomes out;
  out.reserve(batch.size());
  std::span<const bus_message> all(batch);
  for (const auto& p : split_parts(all.size(), path, opts_.max_batch)) {
    auto part = all.subspan(p.begin, p.size);
    if (p.new_owner) owner = next_owner();
    if (p.race && !claims_after(co_await race(part.front().id, part.size(), owner))) {
      lua::claim_outcome lost;  // another worker holds the batch: "taken"
      for (const auto& m : part) {
        settle_one(m, lost, path);
        out.push_back(lost);
      }
      continue;
    }
    auto claimed = co_await claims_.claim(part, owner);
    if (!claimed) {
      counters_ += failed_claim(part.size());
      log::warn("claim of {} messages failed: {} {}", part.size(), claimed.error().code,
                claimed.error().message);
      out.resize(out.size() + part.size());
      continue;
    }
    // The sweeper passes a marked payload's outbox entry on one key; a lost mark only
    // costs it the records.
    if (writes_batch_mark(part.size(), all.size(), path, conn_->is_cluster(), claimed.value()))
      conn_->async_exec(lua::batch_done_command(keys_, part, opts_.claim.dedup_window),
                        asio::detached);
    for (std::size_t i = 0; i < part.size(); ++i) {
      const auto& o = claimed.value()[i];
      if (settle_one(part[i], o, path)) co_await dead_letter(part[i], owner, o.number);
      out.emplace_back(o);
    }
  }
  co_return out;
}

bool bus_worker::settle_one(const bus_message& m, const lua::claim_outcome& o, claim_path path) {
  auto s = settle(o, path);
  if (opts_.trace)
    trace_.record(
        m.id,
        {{"event", s.trace_claim}, {"worker", opts_.id}, {"outcome", lua::to_string(o.state)}});
  counters_ += s.tally;
  if (opts_.trace && !s.trace_delivery.empty())
    trace_.record(m.id, {{"event", s.trace_delivery}, {"worker", opts_.id}, {"offset", o.number}});
  switch (s.note) {
    case claim_note::none:
      break;
    case claim_note::delivery_failed:
      log::warn(log::fields{{"message_id", m.id}, {"user", m.user}, {"worker", opts_.id}},
                "delivery of {} to {} failed: {}", m.id, m.user, o.error);
      break;
    case claim_note::heard_expired:
      log::warn(
          "message {} to {} (published at {} ms) heard past the dedup window: not "
          "delivered, it may have been delivered already; counted as retention_exceeded",
          m.id, m.user, m.ts);
      break;
  }
  return s.dead_letter;
}

asio::awaitable<void> bus_worker::dead_letter(const bus_message& m, const std::string& owner,
                                              long long number) {
  leased_[m.id] = {m, owner};
  auto plan = plan_dead_letter(number);
  auto dead = co_await claims_.dead_letter(m, owner, plan.reason, plan.attempts);
  counters_ += dead_lettered(dead && dead.value().marked);
  if (dead && dead.value().marked) {
    counters_.dead_letters_trimmed += static_cast<std::uint64_t>(dead.value().trimmed);
    if (opts_.trace)
      trace_.record(m.id,
                    {{"event", "dead_lettered"}, {"worker", opts_.id}, {"reason", plan.reason}});
    log::warn(log::fields{{"message_id", m.id}, {"user", m.user}, {"worker", opts_.id}},
              "message {} to {} dead-lettered: {}", m.id, m.user, plan.reason);
  }
  leased_.erase(m.id);
}

asio::awaitable<void> bus_worker::flush_stats() {
  counters_.wait_replicas_timeout = claims_.wait_timeouts();
  auto now = counters_;
  auto stats = keys_.plain("stats");
  std::vector<redis::command> cmds;
  for (const auto& [field, n] : stats_increments(now, flushed_))
    cmds.push_back({"HINCRBY", stats, std::string(field), std::to_string(n)});
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
  if (shard_bus_) shard_bus_->stop();
  heartbeat_.stop();
  sweeper_.stop();
  queued_.clear();  // not claimed yet: other workers (or the sweeper) take them
  backlog_.clear();
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
    auto released = co_await claims_.release(lease.first, lease.second);
    if (!released)
      log::warn(log::fields{{"message_id", id}, {"worker", opts_.id}},
                "could not hand back the lease on message {} (it lapses by itself): {}", id,
                released.error().message);
    else if (released.value())
      log::info(log::fields{{"message_id", id}, {"worker", opts_.id}},
                "handed back the lease on message {}", id);
  }
  co_await flush_stats();
  co_await heartbeat_.remove();
  conn_->stop();
}

}  // namespace pushonce::worker
