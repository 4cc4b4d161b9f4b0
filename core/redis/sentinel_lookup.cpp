#include "core/redis/sentinel_lookup.hpp"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/redis/error.hpp"
#include "core/redis/resp_stream.hpp"
#include "core/redis/sentinel_choice.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

// Connects to one sentinel: with the URL's credentials, then without when they are refused.
asio::awaitable<std::error_code> connect_sentinel(resp_stream& s, connection_options o) {
  auto ec = co_await s.connect(o);
  if (ec != error::login_refused || o.where.password.empty()) co_return ec;
  o.where.user.clear();
  o.where.password.clear();
  co_return co_await s.connect(o);
}

// One sentinel's answer to `query`, within the connect timeout after connecting.
asio::awaitable<std::error_code> ask(asio::any_io_executor ex, const connection_options& o,
                                     const command& query, reply& out) {
  resp_stream s(ex);
  if (auto ec = co_await connect_sentinel(s, o)) co_return ec;
  asio::steady_timer timer(ex, o.connect_timeout);
  auto outcome = co_await (s.call(query, out) || timer.async_wait(use_tuple));
  s.close();
  if (outcome.index() == 1) co_return error::timeout;
  co_return std::get<0>(outcome);
}

}  // namespace

asio::awaitable<std::optional<endpoint>> find_master(asio::any_io_executor ex,
                                                     const connection_options& opts,
                                                     sentinel_choice& choice, std::string& why) {
  why.clear();
  // A sentinel is asked as a plain server: no database, no name, no ROLE check.
  connection_options o;
  o.connect_timeout = opts.connect_timeout;
  auto query = choice.query();
  for (auto i : choice.order()) {
    o.where = choice.sentinel(i);
    reply r;
    std::string what;
    std::optional<endpoint> master;
    if (auto ec = co_await ask(ex, o, query, r))
      what = ec.message();
    else
      master = choice.on_answer(i, r, what);
    if (master) co_return master;
    why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", o.where.display(), what);
  }
  co_return std::nullopt;
}

}  // namespace pushonce::redis
