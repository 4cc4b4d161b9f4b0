#include "bench/publisher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <memory>

#include "bench/wire.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::bench {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct shared {
  run_state& run;
  const rate_schedule& schedule;
  delivery_ledger& ledger;
  publish_totals& totals;
  std::int64_t phase_start, stop_sending_at;
  std::uint64_t next = 0;  // the next batch to send
  tcp::endpoint target;
  int running = 0;
};

// The answer to one request: the HTTP status (0: no answer), the body, Retry-After (ms).
struct answer {
  int status = 0;
  std::string body;
  long retry_after_ms = 0;
};

asio::awaitable<answer> post(std::unique_ptr<beast::tcp_stream>& stream, shared& sh,
                             const std::string& body) {
  auto ex = co_await asio::this_coro::executor;
  answer a;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!stream) {
      stream = std::make_unique<beast::tcp_stream>(ex);
      stream->expires_after(std::chrono::seconds(10));
      auto [cec] = co_await stream->async_connect(sh.target, use_tuple);
      if (cec) {
        stream.reset();
        co_return a;
      }
      // A request is written as head and body: without this the body waits for the
      // server's delayed ACK of the head (Nagle).
      boost::system::error_code ignored;
      stream->socket().set_option(tcp::no_delay(true), ignored);
    }
    http::request<http::string_body> req{http::verb::post, "/api/publish", 11};
    req.set(http::field::host, fmt::format("{}:{}", sh.run.o.publish.host, sh.run.o.publish.port));
    req.set(http::field::authorization, "Bearer " + sh.run.o.api_key);
    req.set(http::field::content_type, "application/json");
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    stream->expires_after(std::chrono::seconds(10));
    auto [wec, wn] = co_await http::async_write(*stream, req, use_tuple);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    boost::system::error_code rec;
    if (!wec) std::tie(rec, std::ignore) = co_await http::async_read(*stream, buf, res, use_tuple);
    if (wec || rec) {
      // A kept-alive connection the server closed in between: once more on a new one.
      stream.reset();
      continue;
    }
    a.status = static_cast<int>(res.result_int());
    a.body = std::move(res.body());
    auto ra = res[http::field::retry_after];
    long seconds = 0;
    if (!ra.empty() && std::from_chars(ra.data(), ra.data() + ra.size(), seconds).ec == std::errc{})
      a.retry_after_ms = seconds * 1000;
    if (!res.keep_alive()) stream.reset();
    co_return a;
  }
  co_return a;
}

asio::awaitable<void> publisher(shared& sh) {
  auto ex = co_await asio::this_coro::executor;
  std::unique_ptr<beast::tcp_stream> stream;
  asio::steady_timer timer(ex);
  auto& run = sh.run;
  const auto& sched = sh.schedule;
  // Retries of a batch go on until the grace period after the last batch was due (a paced
  // run) or after this batch was first sent (as fast as possible).
  const auto grace = std::chrono::duration_cast<std::chrono::nanoseconds>(run.o.grace).count();
  const auto schedule_end = sched.paced() && sched.batches() > 0
                                ? sh.phase_start + sched.due(sched.batches()).count()
                                : sh.stop_sending_at;
  for (;;) {
    if (run.stopping) break;
    const auto k = sh.next;
    const auto size = sched.size_of(k);
    if (size == 0) break;
    if (sh.stop_sending_at > 0 && run.now() >= sh.stop_sending_at) break;
    ++sh.next;
    std::int64_t due = sh.phase_start + sched.due(k).count();
    if (sched.paced()) {
      const auto wait = due - run.now();
      if (wait > 0) {
        timer.expires_after(std::chrono::nanoseconds(wait));
        co_await timer.async_wait(use_tuple);
      } else if (-wait > 1'000'000) {
        ++sh.totals.late_batches;
      }
    } else {
      due = run.now();
    }
    const auto first = sched.first_of(k);
    for (auto seq = first; seq < first + size; ++seq) sh.ledger.sent(seq, due);
    const auto body =
        publish_body(run.prefix, run.run_id, run.o.users, first, size, due, run.o.idempotency_keys);
    if (sh.totals.first_send < 0) sh.totals.first_send = run.now();
    run.sent.fetch_add(size, std::memory_order_relaxed);
    for (int attempt = 0;; ++attempt) {
      ++sh.totals.requests;
      auto a = co_await post(stream, sh, body);
      sh.totals.last_answer = run.now();
      if (a.status == 200) {
        auto ok = parse_publish_reply(a.body, size);
        if (!ok) {
          ++sh.totals.errors["bad_answer"];
          ++run.errors;
          break;
        }
        for (std::uint64_t i = 0; i < size; ++i) {
          if ((*ok)[i]) {
            sh.ledger.published(first + i);
            run.expected_frames.fetch_add(run.sessions_of_user[(first + i) % run.o.users],
                                          std::memory_order_relaxed);
          } else {
            sh.ledger.refused(first + i);
          }
        }
        break;
      }
      ++sh.totals.errors[a.status == 0 ? std::string("no_answer") : std::to_string(a.status)];
      ++run.errors;
      const bool again = a.status == 0 || a.status == 429 || a.status >= 500;
      if (!again) {  // refused: nothing of the request was published
        for (auto seq = first; seq < first + size; ++seq) sh.ledger.refused(seq);
        break;
      }
      // Without idempotency keys a request that may have been published in part (no answer,
      // 5xx) is not sent again: its messages stay unknown rather than risk a duplicate.
      if (a.status != 429 && !run.o.idempotency_keys) break;                       // unknown
      if (run.stopping || run.now() > std::max(schedule_end, due) + grace) break;  // unknown
      ++sh.totals.retries;
      timer.expires_after(std::chrono::milliseconds(a.retry_after_ms > 0
                                                        ? std::min(a.retry_after_ms, 1000L)
                                                        : 100L * std::min(attempt + 1, 10)));
      co_await timer.async_wait(use_tuple);
    }
  }
  if (stream) {
    boost::system::error_code ignored;
    stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
}

}  // namespace

asio::awaitable<void> publish_all(run_state& run, const rate_schedule& schedule,
                                  delivery_ledger& ledger, publish_totals& totals,
                                  std::int64_t phase_start, std::int64_t stop_sending_at) {
  auto ex = co_await asio::this_coro::executor;
  shared sh{run, schedule, ledger, totals, phase_start, stop_sending_at, 0, {}, 0};
  tcp::resolver resolver(ex);
  auto [rec, results] = co_await resolver.async_resolve(
      run.o.publish.host, std::to_string(run.o.publish.port), use_tuple);
  if (rec || results.empty()) {
    ++totals.errors["resolve"];
    co_return;
  }
  sh.target = *results.begin();
  asio::steady_timer done(ex, asio::steady_timer::time_point::max());
  sh.running = static_cast<int>(run.o.inflight);
  for (std::uint64_t i = 0; i < run.o.inflight; ++i)
    asio::co_spawn(
        ex,
        [&sh, &done]() -> asio::awaitable<void> {
          co_await publisher(sh);
          if (--sh.running == 0) done.cancel();
        },
        asio::detached);
  co_await done.async_wait(use_tuple);
}

}  // namespace pushonce::bench
