#include "core/redis/connection.hpp"

#include <atomic>
#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <deque>

#include "core/backoff.hpp"
#include "core/log.hpp"
#include "core/redis/complete.hpp"
#include "core/redis/error.hpp"
#include "core/redis/resp_stream.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using clock_type = std::chrono::steady_clock;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_write_batch = 256 * 1024;
}  // namespace

// Everything lives on one strand. `waiting` holds encoded commands not yet written;
// `inflight` holds written ones in the order their replies will arrive. A command that
// times out in flight keeps its slot (with no handler) so later replies still match.
struct connection::state : std::enable_shared_from_this<connection::state> {
  struct batch {
    std::vector<result> results;
    std::size_t remaining = 0;
    asio::any_completion_handler<void(std::vector<result>)> handler;
  };
  struct pending {
    std::string wire;
    clock_type::time_point deadline;
    handler_type handler;          // single command
    std::shared_ptr<batch> group;  // or one slot of a batch
    std::size_t index = 0;
    bool done = false;
  };

  state(asio::any_io_executor ex, connection_options o)
      : strand(asio::make_strand(ex)),
        stream(strand),
        opts(std::move(o)),
        wake(strand),
        ticker(strand),
        pause(strand),
        retry(opts.backoff_initial, opts.backoff_max) {}

  asio::strand<asio::any_io_executor> strand;
  resp_stream stream;
  connection_options opts;
  asio::steady_timer wake;    // writer's condition variable
  asio::steady_timer ticker;  // deadline sweep
  asio::steady_timer pause;   // backoff between connection attempts (stop() cancels it)
  backoff retry;
  std::deque<std::shared_ptr<pending>> waiting, inflight;
  std::size_t queued = 0;
  std::atomic<bool> connected{false};
  bool stopped = false, started = false;
  std::function<void()> on_connect;

  void finish(pending& p, std::error_code ec, reply r) {
    if (p.done) return;
    p.done = true;
    --queued;
    if (p.group) {
      auto& g = *p.group;
      g.results[p.index] = result{ec, std::move(r)};
      if (--g.remaining == 0) {
        auto h = std::move(g.handler);
        detail::complete(std::move(h), strand, std::move(g.results));
      }
      p.group.reset();
    } else {
      auto h = std::move(p.handler);
      detail::complete(std::move(h), strand, ec, std::move(r));
    }
  }

  void enqueue(std::shared_ptr<pending> p) {
    ++queued;  // finish() counts it down again
    if (stopped) return finish(*p, error::stopped, {});
    if (queued > opts.max_queued) return finish(*p, error::queue_full, {});
    p->deadline = clock_type::now() + opts.command_timeout;
    waiting.push_back(std::move(p));
    wake.cancel();
  }

  void fail_inflight(std::error_code ec) {
    for (auto& p : inflight) finish(*p, ec, {});
    inflight.clear();
  }

  asio::awaitable<void> writer() {
    std::string buf;
    for (;;) {
      if (waiting.empty()) {
        wake.expires_at(clock_type::time_point::max());
        co_await wake.async_wait(use_tuple);
        if (stopped) co_return;
        continue;
      }
      buf.clear();
      while (!waiting.empty() && buf.size() < max_write_batch) {
        auto p = std::move(waiting.front());
        waiting.pop_front();
        if (p->done) continue;  // timed out while waiting
        buf.append(p->wire);
        inflight.push_back(std::move(p));
      }
      if (buf.empty()) continue;
      auto [ec, n] = co_await asio::async_write(stream.socket(), asio::buffer(buf), use_tuple);
      if (ec) co_return;
    }
  }

  asio::awaitable<void> reader() {
    for (;;) {
      reply r;
      if (auto ec = co_await stream.read(r)) {
        log::debug("redis: read: {}", ec.message());
        co_return;
      }
      if (inflight.empty()) {
        log::warn("redis: unexpected reply from {}", opts.where.display());
        co_return;
      }
      auto p = std::move(inflight.front());
      inflight.pop_front();
      finish(*p, {}, std::move(r));
    }
  }

  // Fails commands past their deadline. A command that waited that long *in flight* means
  // the server stopped answering: the connection is dropped so that it reconnects.
  asio::awaitable<void> deadlines() {
    auto period = std::max(std::chrono::milliseconds{10}, opts.command_timeout / 10);
    for (;;) {
      ticker.expires_after(std::min(period, std::chrono::milliseconds{100}));
      co_await ticker.async_wait(use_tuple);
      if (stopped) co_return;
      auto now = clock_type::now();
      for (auto& p : waiting)
        if (!p->done && p->deadline <= now) finish(*p, error::timeout, {});
      while (!waiting.empty() && waiting.front()->done) waiting.pop_front();
      bool stuck = false;
      for (auto& p : inflight) {
        if (!p->done && p->deadline <= now) {
          finish(*p, error::timeout, {});
          stuck = true;
        }
      }
      if (stuck && connected) {
        log::warn("redis: {} did not answer in {} ms; reconnecting", opts.where.display(),
                  opts.command_timeout.count());
        stream.close();
      }
    }
  }

  asio::awaitable<void> run() {
    auto self = shared_from_this();
    asio::co_spawn(
        strand, [self]() { return self->deadlines(); }, asio::detached);
    bool was_down = false;
    while (!stopped) {
      auto ec = co_await stream.connect(opts);
      if (stopped) break;
      if (ec) {
        auto delay = retry.next();
        if (!was_down || retry.attempts() % 20 == 1)
          log::warn("redis: cannot connect to {}: {}; retrying in {} ms", opts.where.display(),
                    ec.message(), delay.count());
        was_down = true;
        pause.expires_after(delay);
        co_await pause.async_wait(use_tuple);
        continue;
      }
      if (was_down) log::info("redis: connected to {}", opts.where.display());
      was_down = false;
      retry.reset();
      connected = true;
      if (on_connect) on_connect();
      co_await (reader() || writer());
      connected = false;
      stream.close();
      fail_inflight(error::disconnected);
      if (stopped) break;
      log::warn("redis: connection to {} lost; reconnecting", opts.where.display());
      was_down = true;
      pause.expires_after(retry.next());
      co_await pause.async_wait(use_tuple);
    }
    fail_inflight(error::stopped);
    for (auto& p : waiting) finish(*p, error::stopped, {});
    waiting.clear();
  }
};

std::shared_ptr<connection> connection::create(asio::any_io_executor ex, connection_options opts) {
  return std::shared_ptr<connection>(new connection(std::move(ex), std::move(opts)));
}

connection::connection(asio::any_io_executor ex, connection_options opts)
    : state_(std::make_shared<state>(std::move(ex), std::move(opts))) {}

connection::~connection() {
  stop();
}

void connection::start() {
  asio::post(state_->strand, [st = state_] {
    if (st->started || st->stopped) return;
    st->started = true;
    asio::co_spawn(
        st->strand, [st] { return st->run(); }, asio::detached);
  });
}

void connection::stop() {
  asio::post(state_->strand, [st = state_] {
    if (st->stopped) return;
    st->stopped = true;
    st->wake.cancel();
    st->ticker.cancel();
    st->pause.cancel();  // a stop during the backoff must not wait for it to end
    st->stream.close();
    if (!st->started) {
      for (auto& p : st->waiting) st->finish(*p, error::stopped, {});
      st->waiting.clear();
    }
  });
}

void connection::on_connect(std::function<void()> fn) {
  asio::post(state_->strand,
             [st = state_, fn = std::move(fn)]() mutable { st->on_connect = std::move(fn); });
}

void connection::initiate(command cmd, handler_type handler) {
  auto p = std::make_shared<state::pending>();
  resp_stream::encode(cmd, p->wire);
  detail::assign(p->handler, std::move(handler));
  asio::post(state_->strand,
             [st = state_, p = std::move(p)]() mutable { st->enqueue(std::move(p)); });
}

asio::awaitable<result> connection::exec(command cmd) {
  auto op = async_exec(std::move(cmd), use_tuple);
  auto [ec, r] = co_await std::move(op);
  co_return result{ec, std::move(r)};
}

struct connection::batch_initiation {
  std::shared_ptr<state> st;
  std::shared_ptr<std::vector<std::shared_ptr<state::pending>>> items;
  void operator()(asio::any_completion_handler<void(std::vector<result>)> handler) const;
};

asio::awaitable<std::vector<result>> connection::exec_all(std::vector<command> cmds) {
  if (cmds.empty()) co_return std::vector<result>{};
  auto items = std::make_shared<std::vector<std::shared_ptr<state::pending>>>();
  items->reserve(cmds.size());
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    auto p = std::make_shared<state::pending>();
    resp_stream::encode(cmds[i], p->wire);
    p->index = i;
    items->push_back(std::move(p));
  }
  // No temporaries with destructors inside the co_await operand (GCC 12 destroys them
  // twice): the initiation and the awaitable are named locals.
  batch_initiation init{state_, items};
  auto op = asio::async_initiate<decltype(asio::use_awaitable), void(std::vector<result>)>(
      std::move(init), asio::use_awaitable);
  std::vector<result> out = co_await std::move(op);
  co_return out;
}

void connection::batch_initiation::operator()(
    asio::any_completion_handler<void(std::vector<result>)> handler) const {
  auto g = std::make_shared<state::batch>();
  g->results.resize(items->size());
  g->remaining = items->size();
  detail::assign(g->handler, std::move(handler));
  for (auto& p : *items) p->group = g;
  asio::post(st->strand, [st = st, items = items]() {
    for (auto& p : *items) st->enqueue(p);
  });
}

bool connection::connected() const {
  return state_->connected;
}
const connection_options& connection::options() const {
  return state_->opts;
}

}  // namespace pushonce::redis
