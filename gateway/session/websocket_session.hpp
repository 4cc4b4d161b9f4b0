#pragma once
// Starts a WebSocket session on an upgraded HTTP connection (docs/protocol.md "WebSocket
// protocol"). The class lives in websocket_session.cpp, the one translation unit that
// includes beast/websocket.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>

#include "gateway/limits/connection_info.hpp"

namespace pushonce::gateway {

struct gateway_state;

/// `socket`'s executor is the io_context itself (one thread) or a strand of its own (several
/// threads), as for the HTTP session it came from; `upgrade` is the HTTP upgrade request (already
/// checked for path, origin and limits). It is released once the handshake is answered. `info` (the
/// client's address and slots) is held for the session's life.
void start_websocket_session(boost::asio::ip::tcp::socket socket,
                             boost::beast::http::request<boost::beast::http::string_body> upgrade,
                             std::shared_ptr<gateway_state> state, connection_info info);

}  // namespace pushonce::gateway
