#pragma once
// The SSE transport of a session (docs/protocol.md "SSE transport"): `GET /sse` holds a
// text/event-stream response open and carries the same session_flow as a WebSocket session;
// `POST /sse/op` runs an op on such a session (of this gateway) and answers its reply frame.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>

#include "gateway/limits/connection_info.hpp"

namespace pushonce::gateway {

struct gateway_state;

/// `request` is the GET /sse request, already checked for path, origin and limits; the
/// session answers 400 (bad since) or 401 (auth) itself, else streams.
void start_sse_session(boost::asio::ip::tcp::socket socket,
                       boost::beast::http::request<boost::beast::http::string_body> request,
                       std::shared_ptr<gateway_state> state, connection_info info);

/// POST /sse/op.
boost::asio::awaitable<boost::beast::http::response<boost::beast::http::string_body>> sse_op_route(
    boost::beast::http::request<boost::beast::http::string_body>& req, gateway_state& st);

}  // namespace pushonce::gateway
