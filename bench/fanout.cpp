#include "bench/fanout.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <memory>
#include <random>

#include "bench/process_usage.hpp"
#include "bench/publisher.hpp"
#include "bench/rate_schedule.hpp"
#include "bench/ws_session.hpp"
#include "core/jwt.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::bench {
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::string random_run_id() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

bool progress_enabled(const bench_options& o) {
  if (o.progress_lines == bench_options::progress::on) return true;
  if (o.progress_lines == bench_options::progress::off) return false;
  return isatty(STDERR_FILENO) != 0;
}

// Opens the sessions of one thread: at most `concurrency` handshakes at once, at most
// `rate` new ones per second (0: no pacing).
asio::awaitable<void> launch(run_state& run, std::vector<ws_session*> sessions,
                             std::uint64_t concurrency, double rate) {
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer t(ex);
  auto in_flight = std::make_shared<std::uint64_t>(0);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    while (*in_flight >= concurrency && !run.stopping) {
      t.expires_after(1ms);
      co_await t.async_wait(use_tuple);
    }
    if (run.stopping) co_return;
    if (rate > 0) {
      t.expires_at(start + std::chrono::nanoseconds(
                               static_cast<std::int64_t>(static_cast<double>(i) * 1e9 / rate)));
      co_await t.async_wait(use_tuple);
    }
    ++*in_flight;
    asio::co_spawn(ex,
                   run_session(*sessions[i], run,
                               [&run, in_flight, s = sessions[i]] {
                                 --*in_flight;
                                 if (!s->gave_up) ++run.opened;
                               }),
                   asio::detached);
  }
}

// Waits until `done` says so or `limit` passes, printing a progress line a second.
template <class Done, class Line>
void wait_with_progress(bool progress, std::chrono::milliseconds limit, Done done, Line line) {
  const auto until = std::chrono::steady_clock::now() + limit;
  auto next_line = std::chrono::steady_clock::now() + 1s;
  while (!done() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
    if (progress && std::chrono::steady_clock::now() >= next_line) {
      std::fprintf(stderr, "%s\n", line().c_str());
      next_line += 1s;
    }
  }
}

}  // namespace

void run_fanout(const bench_options& o, run_report& out,
                const std::vector<pthread_t>& other_threads) {
  run_state run(o);
  run.run_id = random_run_id();
  run.prefix = o.user_prefix.empty() ? fmt::format("pb-{}-", run.run_id) : o.user_prefix;
  const bool progress = progress_enabled(o);

  // Sessions: session i is user i mod M, on gateway (i + i/M) mod G so that the sessions of
  // one user sit on different gateways, from source i mod S, on thread i mod T.
  std::vector<std::unique_ptr<ws_session>> sessions;
  sessions.reserve(o.sessions);
  run.sessions_of_user.assign(o.users, 0);
  std::vector<std::string> tokens(o.jwt_secret.empty() ? 0 : o.users);
  for (std::uint64_t i = 0; i < o.sessions; ++i) {
    auto s = std::make_unique<ws_session>(i, i % o.users, o.users);
    s->gateway = o.gateways[(i + i / o.users) % o.gateways.size()];
    s->sse = o.sse;
    if (!o.sources.empty()) s->source = o.sources[i % o.sources.size()];
    s->name = fmt::format("{}{}", run.prefix, s->user);
    if (!o.jwt_secret.empty()) {
      auto& tok = tokens[s->user];
      if (tok.empty()) tok = jwt::mint(s->name, std::chrono::hours(24), o.jwt_secret);
      s->token = tok;
    }
    ++run.sessions_of_user[s->user];
    sessions.push_back(std::move(s));
  }

  std::vector<std::unique_ptr<thread_slot>> slots;
  for (unsigned t = 0; t < o.threads; ++t) slots.push_back(std::make_unique<thread_slot>());
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  for (auto& s : slots) guards.push_back(asio::make_work_guard(s->io));
  std::vector<std::vector<ws_session*>> per_thread(o.threads);
  for (auto& s : sessions) {
    s->slot = slots[s->index % o.threads].get();
    per_thread[s->index % o.threads].push_back(s.get());
  }
  std::vector<std::thread> threads;
  for (auto& s : slots) threads.emplace_back([slot = s.get()] { slot->io.run(); });

  auto merged = [&](bool connect) {
    latency_histogram h;
    for (auto& s : slots) {
      std::lock_guard lock(s->mutex);
      h.merge(connect ? s->connect : s->latency);
    }
    return h;
  };
  auto merged_accepted = [&] {
    latency_histogram h;
    for (auto& s : slots) h.merge(s->accepted);  // the threads have stopped
    return h;
  };

  // 1. Open every session.
  out.tool_rss_bytes_idle = rss_bytes(0);
  out.system.rss_bytes_before = sum_rss(o.pids);
  const auto open_start = run.now();
  for (unsigned t = 0; t < o.threads; ++t)
    asio::co_spawn(
        slots[t]->io,
        launch(run, per_thread[t], std::max<std::uint64_t>(1, o.connect_concurrency / o.threads),
               static_cast<double>(o.connect_rate) / o.threads),
        asio::detached);
  wait_with_progress(
      progress, std::chrono::milliseconds(std::max<std::uint64_t>(60000, o.sessions * 2)),
      [&] { return run.opened + run.given_up >= o.sessions; },
      [&] {
        auto h = merged(true);
        return fmt::format(
            "{:6.1f} s  sessions open {} of {}  connect p50 {:.2f} ms  p99 {:.2f} ms  failed {}",
            static_cast<double>(run.now()) / 1e9, run.opened.load(), o.sessions,
            static_cast<double>(h.percentile(0.5)) / 1000,
            static_cast<double>(h.percentile(0.99)) / 1000, run.given_up.load());
      });
  out.connect_s = static_cast<double>(run.now() - open_start) / 1e9;
  if (o.what == bench_options::mode::idle || o.hold.count() > 0) {
    // Sessions held before any message (idle: the whole run; fanout: several tool
    // processes then overlap, for more sessions than one process has descriptors).
    std::this_thread::sleep_for(1s);  // the gateways' memory settles
    wait_with_progress(
        progress, o.hold, [] { return false; },
        [&] {
          return fmt::format("{:6.1f} s  sessions open {}  disconnects {}",
                             static_cast<double>(run.now()) / 1e9, run.opened.load(),
                             run.disconnects.load());
        });
  }
  out.system.rss_bytes_after = sum_rss(o.pids);
  out.tool_rss_bytes = rss_bytes(0);

  // 2. Publish on the schedule while the sessions verify what arrives.
  rate_schedule schedule(o.rate, o.batch, o.messages);
  delivery_ledger ledger(o.users);
  publish_totals totals;
  const bool publishing =
      o.what != bench_options::mode::idle && (o.messages > 0 || o.duration.count() > 0);
  if (publishing) {
    auto tool_cpu = [&] {
      double s = 0;
      for (auto& t : threads) s += thread_cpu_seconds(t.native_handle());
      return s;
    };
    auto other_cpu = [&] {
      double s = 0;
      for (auto t : other_threads) s += thread_cpu_seconds(t);
      return s;
    };
    const double cpu0 = tool_cpu(), other0 = other_cpu(), pids0 = sum_cpu(o.pids);
    const auto phase_start = run.now();
    const std::int64_t stop_at =
        o.messages == 0 ? phase_start + std::chrono::nanoseconds(o.duration).count() : 0;
    std::atomic<bool> published{false};
    asio::co_spawn(
        slots[0]->io,
        [&]() -> asio::awaitable<void> {
          co_await publish_all(run, schedule, ledger, totals, phase_start, stop_at);
          published = true;
        },
        asio::detached);
    std::uint64_t last_sent = 0, last_received = 0;
    auto line = [&] {
      const auto sent = run.sent.load(), received = run.received.load();
      auto l = progress_line(static_cast<double>(run.now() - phase_start) / 1e9, sent, received,
                             static_cast<double>(sent - last_sent),
                             static_cast<double>(received - last_received), merged(false),
                             run.duplicates.load(), run.errors.load());
      last_sent = sent;
      last_received = received;
      return l;
    };
    wait_with_progress(
        progress, std::chrono::hours(24 * 365), [&] { return published.load(); }, line);
    // Frames still on their way: until every owed frame came or the grace period passed.
    wait_with_progress(
        progress, o.grace, [&] { return run.received.load() >= run.expected_frames.load(); }, line);
    std::this_thread::sleep_for(o.linger);  // a late duplicate
    out.tool_cpu_s = tool_cpu() - cpu0;
    out.standin_cpu_s = other_cpu() - other0;
    out.system.cpu_s = sum_cpu(o.pids) - pids0;
    const auto last = run.last_frame.load();
    out.publish_s = static_cast<double>(totals.last_answer - totals.first_send) / 1e9;
    out.delivery_s =
        static_cast<double>(std::max(last, totals.last_answer) - totals.first_send) / 1e9;
  }

  // 3. Stop: every session notes whether it is connected, then closes.
  run.stopping = true;
  for (unsigned t = 0; t < o.threads; ++t)
    asio::post(slots[t]->io, [&, t] {
      for (auto* s : per_thread[t]) {
        s->down_at_end = !s->verifier.connected();
        if (s->close) s->close();
      }
    });
  guards.clear();
  std::this_thread::sleep_for(300ms);
  for (auto& s : slots) s->io.stop();
  for (auto& t : threads) t.join();

  // 4. The account.
  out.mode = o.what == bench_options::mode::idle    ? "idle"
             : o.what == bench_options::mode::floor ? "floor"
                                                    : "fanout";
  out.sessions = o.sessions;
  out.users = o.users;
  out.gateways = o.gateways.size();
  out.threads = o.threads;
  out.rate = o.rate;
  out.batch = o.batch;
  out.inflight = o.inflight;
  out.opened = run.opened;
  out.connect_failures = run.given_up;
  out.disconnects = run.disconnects;
  out.requests = totals.requests;
  out.retries = totals.retries;
  out.publish_errors = totals.errors;
  out.late_batches = totals.late_batches;
  out.error_frames = run.error_frames;
  out.bad_frames = run.bad_frames;
  out.ledger = ledger.message_totals();
  for (auto& s : sessions) {
    out.frames.add(s->verifier.counts());
    if (s->gave_up) continue;
    if (s->down_at_end) {
      ++out.sessions_down_at_end;
      continue;
    }
    ledger.account(s->verifier, out.ledger);
  }
  out.latency_us = merged(false);
  out.connect_us = merged(true);
  out.accepted_us = merged_accepted();
}

}  // namespace pushonce::bench
