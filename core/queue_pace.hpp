#pragma once
// What a queue's estimated wait is computed from (core/wait_estimate): its assignment
// record (NS:{q:Q}:rate) and its paused flag and state (NS:{q:Q}:settings), read in one
// pipeline of two commands (one slot), and the estimate at a position.

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/assignment_rate.hpp"
#include "core/keys.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/reply.hpp"

namespace pushonce {

struct queue_pace {
  assignment_record record;
  bool paused = false;
  bool prequeue = false;

  /// eta_s at `position` at `now_ms` (core/wait_estimate), nullopt when there is nothing
  /// to go by.
  std::optional<long long> eta_s(long long position, long long now_ms) const;
  /// The recent pace (core/wait_estimate), 0 when paused or pre-queued.
  double per_minute(long long now_ms) const;
};

/// HGETALL of the rate hash, HMGET of the settings' paused and state.
std::vector<redis::command> queue_pace_reads(const keys& k, const std::string& queue);
/// The replies of queue_pace_reads (both ok).
queue_pace parse_queue_pace(const redis::reply& rate, const redis::reply& settings);
boost::asio::awaitable<outcome<queue_pace>> read_queue_pace(std::shared_ptr<redis::connection> conn,
                                                            keys k, std::string queue);
/// Milliseconds since the epoch (the clock assign.lua's record is in).
long long pace_now_ms();

}  // namespace pushonce
