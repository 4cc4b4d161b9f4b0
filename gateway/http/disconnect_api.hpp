#pragma once
// POST /api/disconnect (the API key, as /api/publish; docs/protocol.md): every gateway closes
// the user's sessions (1008 "disconnected") and, with "revoke", refuses the user's tokens
// issued at or before now. The body's meaning and the answer are decided here without
// sockets; the route runs core/disconnect (lua/revoke.lua).
//
// Body: {"user":"U"} or {"user":"U","revoke":true}. Answer: {"user":"U","disconnected":true}
// (with "revoked_until": ms since the epoch when revoked).

#include <chrono>
#include <string>
#include <string_view>

#include "core/outcome.hpp"
#include "gateway/http/http_routes.hpp"

namespace pushonce::gateway {

struct disconnect_body {
  std::string user;
  bool revoke = false;
  bool operator==(const disconnect_body&) const = default;
};

/// The request, or bad_request with why (not a JSON object, no valid "user", "revoke" not a
/// boolean, an unknown field).
outcome<disconnect_body> parse_disconnect_body(std::string_view body);

/// How long a revocation is kept: the gateway's --jwt-max-lifetime plus its leeway (no token
/// it accepts can be older), or 24 hours when there is no maximum; at most 365 days.
std::chrono::seconds revocation_lifetime(std::chrono::seconds max_lifetime,
                                         std::chrono::seconds leeway);

/// The 200 answer's body.
std::string render_disconnect_answer(const std::string& user, long long revoked_until_ms);

/// The route (http_routes.cpp's table).
boost::asio::awaitable<http_response> disconnect_route(http_request& req, gateway_state& st);

}  // namespace pushonce::gateway
