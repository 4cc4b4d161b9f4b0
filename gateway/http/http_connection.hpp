#pragma once
// One HTTP connection: requests in order (keep-alive), routed through http_routes; a
// WebSocket upgrade on /ws hands the socket to a websocket_session.

#include <boost/asio/ip/tcp.hpp>
#include <memory>

namespace pushonce::gateway {

struct gateway_state;

/// `socket`'s executor is the io_context itself (one thread) or a strand of its own (several
/// threads): the session never locks.
void start_http_session(boost::asio::ip::tcp::socket socket, std::shared_ptr<gateway_state> state);

}  // namespace pushonce::gateway
