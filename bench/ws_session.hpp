#pragma once
// One WebSocket session of a run, for its whole life: connect (from a chosen source
// address), hello, frames into its verifier, and on any disconnect a resume with `since`
// until the run stops. The decisions are the verifier's (bench/verifier.hpp).

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string>

#include "bench/run_state.hpp"
#include "bench/verifier.hpp"

namespace pushonce::bench {

struct ws_session {
  ws_session(std::uint64_t index, std::uint64_t user, std::uint64_t users)
      : index(index), user(user), verifier(user, users) {}

  std::uint64_t index, user;
  session_verifier verifier;
  thread_slot* slot = nullptr;
  endpoint gateway;
  std::string source;  // empty: any
  std::string name, token;
  bool sse = false;  // GET /sse instead of a WebSocket
  bool gave_up = false;
  bool down_at_end = false;     // not connected when the run stopped
  std::function<void()> close;  // closes the current connection (on the session's thread)
};

/// Runs `s` until the run stops. `opened` is called once: after the first welcome, or when
/// the session gives up connecting.
boost::asio::awaitable<void> run_session(ws_session& s, run_state& run,
                                         std::function<void()> opened);

}  // namespace pushonce::bench
