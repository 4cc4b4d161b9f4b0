#include "gateway/session/session_presence.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "core/lua/presence.hpp"
#include "core/use_tuple.hpp"
#include "gateway/state/presence_ledger.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

struct session_presence::track {
  calls c;
  std::string user;
  bool open_landed = false;
  bool close_wanted = false;
  bool running = false;  // a coroutine is making this session's calls
};

namespace {

// One presence script call (the inputs `build()` makes name the script), retried with
// backoff until it lands or `give_up()` says so.
template <class Build, class GiveUp>
asio::awaitable<bool> until_landed(session_presence::track& t, Build build, GiveUp give_up) {
  using inputs = decltype(build());
  asio::steady_timer wait(co_await asio::this_coro::executor);
  for (int failures = 0; !give_up();) {
    inputs in = build();
    auto r = co_await lua::run_script(*t.c.conn, std::move(in));
    if (r.ok()) co_return true;
    auto delay = presence_retry_delay(++failures);
    if (failures == 1 || failures % 10 == 0)
      log::warn("presence: {} for {} failed ({}): retrying every {} ms at most", inputs::script,
                t.user, r.ec ? r.ec.message() : r.value.str, delay.count());
    wait.expires_after(delay);
    co_await wait.async_wait(use_tuple);
  }
  co_return false;
}

asio::awaitable<void> run_close(std::shared_ptr<session_presence::track> t) {
  auto& tr = *t;
  bool landed = co_await until_landed(
      tr, [&] { return lua::presence_close_for(tr.c.keys, tr.user, tr.c.instance); },
      [] { return false; });
  if (landed) tr.c.ledger->closed(tr.user);
}

asio::awaitable<void> run_open(std::shared_ptr<session_presence::track> t) {
  auto& tr = *t;
  tr.running = true;
  tr.open_landed = co_await until_landed(
      tr, [&] { return lua::presence_open_for(tr.c.keys, tr.user, tr.c.instance); },
      [&] { return tr.close_wanted; });
  if (tr.open_landed) {
    tr.c.ledger->opened(tr.user);
    if (tr.close_wanted) co_await run_close(t);  // the session ended while the open flew
  }
  tr.running = false;
}

}  // namespace

void session_presence::open(asio::any_io_executor strand, calls c, std::string user) {
  if (t_ || c.instance.empty()) return;
  t_ = std::make_shared<track>(track{std::move(c), std::move(user)});
  asio::co_spawn(strand, run_open(t_), asio::detached);
}

void session_presence::close(asio::any_io_executor strand) {
  if (!t_ || t_->close_wanted) return;
  t_->close_wanted = true;
  if (t_->running || !t_->open_landed) return;  // the open's coroutine closes it, or none is due
  asio::co_spawn(strand, run_close(t_), asio::detached);
}

}  // namespace pushonce::gateway
