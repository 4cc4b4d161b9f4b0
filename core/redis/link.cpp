#include "core/redis/link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/redis/error.hpp"
#include "core/redis/sentinel_lookup.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {
constexpr std::size_t max_write_batch = 256 * 1024;

// Behind a Sentinel, a failover is waited out in short steps: the new master is used
// within a second of its promotion.
std::chrono::milliseconds retry_ceiling(const connection_options& o) {
  return o.sentinel.enabled() ? std::min(o.backoff_max, std::chrono::milliseconds{1000})
                              : o.backoff_max;
}
}  // namespace

link::link(asio::any_io_executor ex, connection_options opts, std::string role, client& owner)
    : strand_(asio::make_strand(ex)),
      stream_(strand_),
      opts_(std::move(opts)),
      role_(std::move(role)),
      owner_(owner),
      tick_period_(std::clamp(opts_.command_timeout / 10, std::chrono::milliseconds{10},
                              std::chrono::milliseconds{100})),
      wake_(strand_),
      tick_(strand_),
      pause_(strand_),
      retry_(opts_.backoff_initial, retry_ceiling(opts_)),
      sentinel_(opts_.sentinel) {}

void link::start(std::shared_ptr<void> keep_alive) {
  if (started_ || stopped_) return;
  started_ = true;
  asio::co_spawn(strand_, ticker(keep_alive), exit_on_exception("redis link ticker"));
  asio::co_spawn(strand_, run(std::move(keep_alive)), exit_on_exception("redis link run loop"));
}

void link::stop() {
  if (stopped_) return;
  stopped_ = true;
  wake_.cancel();
  tick_.cancel();
  pause_.cancel();  // a stop during the backoff must not wait for it to end
  stream_.close();
  owner_.on_stopped();
}

void link::wake() {
  wake_.cancel();
}

void link::drop() {
  if (connected_) stream_.close();
}

// A cluster's subscriber (or any link given seeds) tries the next seed when one cannot be
// reached; a single-node link has no seeds and stays on its one address.
void link::next_seed() {
  if (opts_.cluster.size() < 2) return;
  seed_ = (seed_ + 1) % opts_.cluster.size();
  opts_.where = opts_.cluster[seed_];
}

asio::awaitable<void> link::pause_before_retry() {
  pause_.expires_after(retry_.next());
  co_await pause_.async_wait(use_tuple);
}

// Asks the sentinels where the master is and points `where` there. stop() cancels the
// question (through pause_).
asio::awaitable<bool> link::locate_master() {
  std::string why;
  pause_.expires_at(clock_type::time_point::max());
  auto outcome =
      co_await (find_master(strand_, opts_, sentinel_, why) || pause_.async_wait(use_tuple));
  if (stopped_ || outcome.index() == 1) co_return false;
  auto& found = std::get<0>(outcome);
  if (!found) {
    if (!was_down_ || retry_.attempts() % 20 == 0)
      log::warn("{}: no master '{}' from the sentinels ({}); retrying (attempt {})", role_,
                opts_.sentinel.master_name, why, retry_.attempts() + 1);
    co_return false;
  }
  if (found->host != opts_.where.host || found->port != opts_.where.port)
    log::info("{}: the sentinels name {} as master '{}'", role_, found->display(),
              opts_.sentinel.master_name);
  opts_.where = std::move(*found);
  co_return true;
}

asio::awaitable<void> link::run([[maybe_unused]] std::shared_ptr<void> keep_alive) {
  while (!stopped_) {
    if (opts_.sentinel.enabled() && !co_await locate_master()) {
      if (stopped_) break;
      was_down_ = true;
      co_await pause_before_retry();
      continue;
    }
    auto ec = co_await stream_.connect(opts_);
    if (stopped_) break;
    if (ec) {
      // A refused login says what Redis answered (WRONGPASS, NOAUTH, DB index out of
      // range) and is an error: it will not pass until someone fixes a setting.
      const bool login = ec == error::login_refused && !stream_.refusal().empty();
      std::string why =
          login ? stream_.refusal()
                : fmt::format("cannot connect to {}: {}", opts_.where.display(), ec.message());
      // (a caller that fails at once on a refused login reports it itself: one line)
      if ((!was_down_ || retry_.attempts() % 20 == 0) && !(login && opts_.fail_on_login_refusal)) {
        if (login)
          log::error(
              "{}: {} (check the password, user and database of the Redis URL); retrying "
              "(attempt {})",
              role_, why, retry_.attempts() + 1);
        else
          log::warn("{}: {}; retrying (attempt {})", role_, why, retry_.attempts() + 1);
      }
      owner_.on_connect_failed(ec, why);
      if (stopped_) break;
      was_down_ = true;
      next_seed();
      co_await pause_before_retry();
      continue;
    }
    if (was_down_) log::info("{}: connected to {}", role_, opts_.where.display());
    was_down_ = false;
    retry_.reset();
    connected_ = true;
    owner_.on_up();
    co_await (reader() || writer());
    connected_ = false;
    stream_.close();
    owner_.on_down();
    if (stopped_) break;
    log::warn("{}: connection to {} lost; reconnecting", role_, opts_.where.display());
    was_down_ = true;
    co_await pause_before_retry();
  }
}

asio::awaitable<void> link::reader() {
  for (;;) {
    reply r;
    if (auto ec = co_await stream_.read(r)) {
      log::debug("{}: read: {}", role_, ec.message());
      co_return;
    }
    if (!owner_.on_reply(std::move(r))) {
      log::warn("{}: unexpected reply from {}", role_, opts_.where.display());
      co_return;
    }
  }
}

// Everything ready at the moment is written at once: one buffer, one write.
asio::awaitable<void> link::writer() {
  for (;;) {
    out_.clear();
    owner_.fill(out_, max_write_batch);
    if (out_.empty()) {
      wake_.expires_at(clock_type::time_point::max());
      co_await wake_.async_wait(use_tuple);
      if (stopped_) co_return;
      continue;
    }
    // Branch here rather than through a helper coroutine: the plain path stays one write.
    if (auto* tls = stream_.tls()) {
      auto [ec, n] = co_await asio::async_write(*tls, asio::buffer(out_), use_tuple);
      if (ec) co_return;
    } else {
      auto [ec, n] = co_await asio::async_write(stream_.socket(), asio::buffer(out_), use_tuple);
      if (ec) co_return;
    }
  }
}

asio::awaitable<void> link::ticker([[maybe_unused]] std::shared_ptr<void> keep_alive) {
  while (!stopped_) {
    tick_.expires_after(tick_period_);
    co_await tick_.async_wait(use_tuple);
    if (stopped_) break;
    if (owner_.on_tick(clock_type::now()) && connected_) stream_.close();
  }
}

}  // namespace pushonce::redis
