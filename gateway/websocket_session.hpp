#pragma once
// Starts a WebSocket session on an upgraded HTTP connection (docs/protocol.md "WebSocket
// protocol"). The class lives in websocket_session.cpp, the one translation unit that
// includes beast/websocket.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>

namespace pushonce::gateway {

struct gateway_state;

/// `socket` runs on its own strand; `upgrade` is the HTTP upgrade request (already checked
/// for path and origin). It is released once the handshake is answered.
void start_websocket_session(boost::asio::ip::tcp::socket socket,
                             boost::beast::http::request<boost::beast::http::string_body> upgrade,
                             std::shared_ptr<gateway_state> state);

}  // namespace pushonce::gateway
