#pragma once
// One browser-like WebSocket session per user for the chaos run: it keeps {epoch, last
// offset}, resumes with hello since on any disconnect (on the other gateway when its own is
// down) and records every frame it gets, for the checks at the end.

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/chaos/chaos_common.hpp"

namespace pushonce::test::chaos {

struct session_state {
  std::string user;
  int gateway = 0;  // the gateway it connects to first
  std::string epoch;
  std::atomic<long long> last_offset{0};
  std::atomic<bool> welcomed{false};
  // Written by the session's thread only; read by the main thread after it joined.
  std::vector<std::pair<std::string, long long>> frames;  // (id, offset) in arrival order
  std::vector<long long> latency_ms;                      // receive time - ts, per frame
  long long connects = 0, not_recovered = 0, welcome_failures = 0, offset_dups = 0, offset_gaps = 0,
            protocol_errors = 0;
  std::vector<std::string> problems;  // the first few, for failure messages

  void note(std::string what) {
    if (problems.size() < 5) problems.push_back(std::move(what));
  }
};

// Runs the session of `s` until `stop`; `ports` are the gateways' (they restart on them).
void run_session(session_state& s, const std::vector<std::uint16_t>& ports,
                 const std::atomic<bool>& stop);

}  // namespace pushonce::test::chaos
