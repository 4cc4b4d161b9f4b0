#pragma once
// A gateway's own check that the leader has not counted its sessions closed (its heartbeat
// lapsed while the process lived on: a pause, a slow link), and the sessions counted again
// when it has (docs/data-model.md, "Presence").

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/keys.hpp"

namespace pushonce::gateway {

struct gateway_state;

/// Runs until st.stopping (or `timer` is cancelled): at once, then every 5 s, one HEXISTS of
/// the instance's "~live" field; when it is gone (presence_fold.lua deletes it first thing,
/// every call), presence_reclaim.lua counts the sessions held here again and sets it.
boost::asio::awaitable<void> check_presence(gateway_state& st, keys k,
                                            boost::asio::steady_timer& timer);

}  // namespace pushonce::gateway
