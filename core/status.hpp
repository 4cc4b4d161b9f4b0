#pragma once
// The system's state as `pushonce-leader status --json` prints it (docs/protocol.md): leader,
// queue length, resources, counters, live workers and gateways. Shared by the CLI and the
// gateway's /api/status (the admin dashboard).

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <string>

#include "core/keys.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce {

/// One queue's entry of "queues": the settings object, length, prequeue_length,
/// abandoned, refused_* counters, assignment_rate_per_min.
boost::asio::awaitable<outcome<boost::json::object>> collect_queue_status(
    std::shared_ptr<redis::connection> conn, keys k, std::string queue);

boost::asio::awaitable<outcome<boost::json::object>> collect_status(
    std::shared_ptr<redis::connection> conn, keys k, std::string queue);

}  // namespace pushonce
