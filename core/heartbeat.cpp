#include "core/heartbeat.hpp"

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>

#include "core/layout.hpp"
#include "core/log.hpp"

namespace pushonce {

namespace asio = boost::asio;

namespace {
long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

heartbeat::heartbeat(std::shared_ptr<redis::connection> conn, keys k, std::string kind,
                     std::string id, std::chrono::milliseconds period, extra_fn extra)
    : conn_(std::move(conn)),
      keys_(std::move(k)),
      kind_(std::move(kind)),
      id_(std::move(id)),
      period_(period),
      extra_(std::move(extra)) {}

std::string heartbeat::hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string make_process_id(std::string_view prefix) {
  std::random_device rd;
  static constexpr char hex[] = "0123456789abcdef";
  std::string tail;
  for (int i = 0; i < 6; ++i) tail.push_back(hex[rd() % 16]);
  return std::string(prefix) + "-" + std::to_string(getpid()) + "-" + tail;
}

asio::awaitable<void> heartbeat::beat() {
  auto now = now_ms();
  auto ttl = std::to_string((period_ * 3).count());
  auto info_key = keys_.plain(kind_ + ":" + id_);
  redis::command hset{"HSET",      info_key,
                      "id",        id_,
                      "pid",       std::to_string(getpid()),
                      "host",      hostname(),
                      "last_seen", std::to_string(now)};
  if (extra_)
    for (auto& [f, v] : extra_()) {
      hset.push_back(f);
      hset.push_back(v);
    }
  std::vector<redis::command> cmds;
  cmds.push_back(std::move(hset));
  cmds.push_back({"PEXPIRE", info_key, ttl});
  cmds.push_back({"ZADD", keys_.plain(kind_ + "s"), std::to_string(now), id_});
  cmds.push_back({"ZREMRANGEBYSCORE", keys_.plain(kind_ + "s"), "-inf",
                  std::to_string(now - 10 * (period_ * 3).count())});
  cmds.push_back(layout_command(keys_));
  cmds.push_back(layout_renew_command(keys_));
  auto rs = co_await conn_->exec_all(std::move(cmds));
  if (rs[0].ec) log::debug("heartbeat: {}", rs[0].ec.message());
  const auto& layout = rs[rs.size() - 2];
  if (layout.ok() && layout.value.kind == redis::reply::type::string) {
    if (auto conflict = layout_conflict(keys_, layout.value.str); conflict && !stopped_) {
      // Beating on would renew a layout this process does not share.
      stop();
      if (on_conflict_)
        on_conflict_(*conflict);
      else
        log::error("{}", *conflict);
    }
  }
}

asio::awaitable<void> heartbeat::run() {
  timer_.emplace(co_await asio::this_coro::executor);
  while (!stopped_) {
    co_await beat();
    if (stopped_) break;
    timer_->expires_after(period_);
    auto [ec] = co_await timer_->async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) break;  // stop() cancelled the wait
  }
  timer_.reset();
}

void heartbeat::stop() {
  stopped_ = true;
  if (timer_) timer_->cancel();
}

asio::awaitable<void> heartbeat::remove() {
  std::vector<redis::command> cmds;
  cmds.push_back({"DEL", keys_.plain(kind_ + ":" + id_)});
  cmds.push_back({"ZREM", keys_.plain(kind_ + "s"), id_});
  co_await conn_->exec_all(std::move(cmds));
}

}  // namespace pushonce
