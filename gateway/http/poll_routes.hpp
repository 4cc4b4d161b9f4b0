#pragma once
// Polling clients' routes (docs/protocol.md "Polling clients"), /api/queue/Q/challenge | join |
// ticket | accept | leave with the user's token (Authorization: Bearer, or ?user= with --dev-auth):
// the decisions of gateway/http/poll carried out with the gateway's Redis link, and each
// poller counted as a presence session of this gateway while it polls.

#include <boost/asio/awaitable.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "gateway/http/poll.hpp"
#include "gateway/limits/token_bucket.hpp"
#include "gateway/protocol/http_response.hpp"
#include "gateway/session/session_presence.hpp"

namespace pushonce::gateway {

struct gateway_state;

/// The pollers of one gateway (gateway_state::polls): their last answers and their presence
/// sessions, closed by a sweep once a second.
struct poll_state {
  poll_table table;
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<session_presence>> presence;
  // Each user's challenge / join / accept / leave at the WebSocket's queue-op rate
  // (--queue-op-rate, --queue-op-burst). Bounded: emptied past max_op_users (every user
  // starts again with a full bucket, never blocked by it).
  std::unordered_map<std::string, token_bucket> op_buckets;
  static constexpr std::size_t max_op_users = 200000;
  bool sweeping = false;
};

boost::asio::awaitable<http_response> poll_route(http_request& req, gateway_state& st);

}  // namespace pushonce::gateway
