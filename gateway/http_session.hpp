#pragma once
// One HTTP connection: requests in order (keep-alive), routed through http_routes; a
// WebSocket upgrade on /ws hands the socket to a websocket_session.

#include <boost/asio/ip/tcp.hpp>
#include <memory>

namespace pushonce::gateway {

struct gateway_state;

/// `socket` runs on its own strand.
void start_http_session(boost::asio::ip::tcp::socket socket, std::shared_ptr<gateway_state> state);

}  // namespace pushonce::gateway
