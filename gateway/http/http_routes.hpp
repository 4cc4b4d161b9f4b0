#pragma once
// The HTTP routes of the gateway (docs/protocol.md "pushonce-gateway"): one table, so a route
// is one entry (the web files, /healthz, /readyz, /metrics, /api/status, /api/publish). /ws
// is not here: the upgrade is handled by http_connection before routing.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/protocol/http_response.hpp"

namespace pushonce::gateway {

struct gateway_state;

struct http_route {
  boost::beast::http::verb method;
  std::string_view path;
  /// Checks on the header alone (auth), before the body is read; an answer ends the request.
  /// The third argument is the request's client address.
  std::function<std::optional<http_response>(const http_request&, gateway_state&,
                                             const std::string&)>
      before_body;
  /// References only (no by-value objects inside a co_await operand: GCC 12).
  std::function<boost::asio::awaitable<http_response>(http_request&, gateway_state&)> handle;
  /// Whether a request may carry a body (POST); on other routes a body is answered 400
  /// before it is read.
  bool takes_body = false;
};

const std::vector<http_route>& http_routes();
/// The route for a method and path (query string already removed), or nullptr.
const http_route* find_route(boost::beast::http::verb method, std::string_view path);

}  // namespace pushonce::gateway
