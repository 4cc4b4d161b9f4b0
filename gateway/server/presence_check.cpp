#include "gateway/server/presence_check.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "core/lua/presence.hpp"
#include "core/use_tuple.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

// Whatever came between the fold and this check, a new session that put the instance back in
// NS:{presence}:gws or a fold cut off half-way, the field tells.
asio::awaitable<void> check_presence(gateway_state& st, keys k, asio::steady_timer& timer) {
  const auto mine = lua::presence_key(k, "gw:" + st.presence_instance);
  bool first = true;  // the first check runs at once and sets the field without a warning
  bool wait = false;
  while (!st.stopping) {
    if (wait) {
      timer.expires_after(st.settings.presence_check);
      auto [ec] = co_await timer.async_wait(use_tuple);
      if (ec || st.stopping) co_return;
    }
    wait = true;
    redis::command ask{"HEXISTS", mine, "~live"};
    auto r = co_await st.conn->exec(std::move(ask));
    if (!r.ok()) continue;
    if (r.value.as_int().value_or(0) == 1) {
      first = false;
      continue;
    }
    auto held = st.presence->counted();  // the sessions whose open landed (no double count)
    if (!first)
      log::warn(
          "presence: this gateway's sessions were counted closed (its heartbeat lapsed): "
          "counting {} users again",
          held.size());
    first = false;
    std::size_t from = 0;
    do {
      std::vector<std::pair<std::string, std::size_t>> part(
          held.begin() + static_cast<std::ptrdiff_t>(from),
          held.begin() + static_cast<std::ptrdiff_t>(std::min(held.size(), from + 1000)));
      auto in = lua::presence_reclaim_for(k, st.presence_instance, part);
      co_await lua::run_script(*st.conn, std::move(in));
      from += 1000;
    } while (from < held.size());
  }
}

}  // namespace pushonce::gateway
