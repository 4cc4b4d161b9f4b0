#include "leader/assigner.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/trace.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

assigner::assigner(duty_context ctx, queue_api& queues)
    : ctx_(std::move(ctx)), queues_(queues), batches_(ctx_, queues), wake_timer_(ctx_.ex) {}

void assigner::start() {
  asio::co_spawn(ctx_.ex, assign_loop(), exit_on_exception("leader assign loop"));
  asio::co_spawn(ctx_.ex, expire_loop(), exit_on_exception("leader expire loop"));
}

void assigner::wake(std::string_view queue) {
  for (auto& q : ctx_.opts.queues)
    if (q == queue) dirty_.insert(q);
  wake_timer_.cancel();
}

void assigner::wake_all() {
  dirty_.insert(ctx_.opts.queues.begin(), ctx_.opts.queues.end());
  wake_timer_.cancel();
}

// A queue's source index is confirmed in NS:sources before its first use and every
// lease length after: the index this leader uses goes with the call, so a failover that
// lost its allocation puts it back, or, when another queue took it meanwhile, gives this
// queue a new one (lua/source.lua). Between checks the known index is used.
asio::awaitable<bool> assigner::ensure_source(const std::string& queue) {
  // As often as the leadership lease runs out (5 s by default).
  const auto source_recheck = ctx_.opts.lease;
  const auto now = std::chrono::steady_clock::now();
  auto known = sources_.find(queue);
  auto checked = sources_checked_.find(queue);
  if (known != sources_.end() && checked != sources_checked_.end() &&
      now - checked->second < source_recheck)
    co_return true;
  const long long held = known != sources_.end() ? known->second : 0;
  auto idx = co_await queues_.source_index(queue, held);
  if (!idx && held != 0) {
    // The check failed (Redis busy, a failover): the known index goes on until the next.
    log::debug("queue {}: source index {} not checked: {}", queue, held, idx.error().message);
    sources_checked_[queue] = now;
    co_return true;
  }
  if (!idx) {
    log::warn("queue {}: no source index: {}", queue, idx.error().message);
    co_return false;
  }
  if (held != 0 && idx.value() != held)
    log::warn(
        "queue {}: source index {} was lost in a failover and taken by another queue; its ids "
        "now use index {}",
        queue, held, idx.value());
  sources_[queue] = idx.value();
  sources_checked_[queue] = now;
  co_return true;
}

// Trace events and the published count of a batch, pipelined and not awaited: tracing
// never slows the assigner.
void assigner::record(const std::string& queue, const std::vector<assignment>& batch,
                      const char* kind) {
  tracer trace(ctx_.conn, ctx_.k);
  for (const auto& a : batch) {
    trace.record(a.id, {{"event", "published"},
                        {"kind", kind},
                        {"queue", queue},
                        {"user", a.user},
                        {"resource", a.resource},
                        {"leader", ctx_.opts.id}});
    if (log::current_level() <= log::level::debug)
      log::debug(log::fields{{"message_id", a.id}, {"user", a.user}}, "queue {}: {} {} to {}",
                 queue, kind, a.resource, a.user);
  }
  ctx_.conn->async_exec(
      redis::command{"HINCRBY", ctx_.k.plain("stats"), "published", std::to_string(batch.size())},
      asio::detached);
}

// Assignments past their accept deadline expire here (their resource goes back to the
// free list and the assigner hands it on), a batch per call. Runs whatever this leader's
// own --accept-timeout is: an earlier leader may have set deadlines.
asio::awaitable<void> assigner::expire_loop() {
  asio::steady_timer timer(ctx_.ex);
  while (!ctx_.stopping()) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(use_tuple);
    if (!ctx_.leading()) continue;
    for (const auto& queue : ctx_.opts.queues) {
      if (!co_await ensure_source(queue)) continue;
      // Copied once: a step-down during a call clears sources_ (never operator[] after a
      // co_await, which would insert source 0 for a re-lead).
      auto found = sources_.find(queue);
      if (found == sources_.end()) continue;
      const auto source = found->second;
      for (int i = 0; i < 100 && ctx_.leading(); ++i) {
        auto r = co_await queues_.expire_batch(queue, source, ctx_.token(), ctx_.opts.batch);
        if (!r) {
          if (r.error().code == errc::fenced)
            co_await ctx_.fenced(queue, "a newer leader has acted on this queue");
          break;
        }
        if (r.value().empty()) break;
        record(queue, r.value(), "expired");
        log::info("queue {}: {} assignments expired", queue, r.value().size());
        dirty_.insert(queue);
        wake_timer_.cancel();
        if (static_cast<long long>(r.value().size()) < ctx_.opts.batch) break;
      }
    }
  }
}

asio::awaitable<void> assigner::assign_queue(const std::string& queue) {
  if (!co_await ensure_source(queue)) {
    dirty_.insert(queue);
    co_return;
  }
  auto found = sources_.find(queue);
  if (found == sources_.end()) co_return;  // stepped down meanwhile
  const auto source = found->second;
  // Bounded rounds so one busy queue cannot starve the others or the lease renewal.
  for (int i = 0; i < 100 && ctx_.leading() && !ctx_.stopping(); ++i) {
    auto r = co_await batches_.assign(queue, source);
    if (!r) {
      if (r.error().code == errc::fenced) {
        // The queues after this one go on with the same token (their fences are theirs).
        co_await ctx_.fenced(queue, "a newer leader has assigned on this queue");
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
    if (static_cast<long long>(r.value().size()) < ctx_.opts.batch) break;
    if (i == 99) dirty_.insert(queue);
  }
}

asio::awaitable<void> assigner::assign_loop() {
  using clock = std::chrono::steady_clock;
  while (!ctx_.stopping()) {
    if (dirty_.empty()) {
      auto until = clock::now() + ctx_.opts.tick;
      bool tick = true;
      for (const auto& [q, at] : due_) {
        if (at < until) {
          until = at;
          tick = false;
        }
      }
      wake_timer_.expires_at(until);
      auto [ec] = co_await wake_timer_.async_wait(use_tuple);
      if (ctx_.stopping()) break;
      if (!ec && tick) dirty_.insert(ctx_.opts.queues.begin(), ctx_.opts.queues.end());
      if (!ec && !tick) {  // a rated queue's due instant
        const auto now = clock::now();
        for (const auto& [q, at] : due_)
          if (at <= now) dirty_.insert(q);
      }
    }
    if (!ctx_.leading()) {
      dirty_.clear();
      due_.clear();
      continue;
    }
    auto todo = std::move(dirty_);
    dirty_.clear();
    for (const auto& q : todo) {
      co_await assign_queue(q);
      // When the queue's rate allows the next one (a read-only call; -1: nothing to wait
      // for, a wake or the tick brings the queue back).
      due_.erase(q);
      auto next = co_await queues_.next_due_ms(q);
      if (next && next.value() >= 0)
        due_[q] = clock::now() + std::chrono::milliseconds(std::max<long long>(next.value(), 5));
    }
  }
}

}  // namespace pushonce::leader
