#pragma once
// GET /api/gate and POST /api/gate/cookie (docs/operations.md "Protecting a checkout"): the
// decisions of gateway/http/gate carried out with the gateway's Redis link (one state read per
// admission and second, one renewal batch per second).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <string>

#include "gateway/protocol/http_response.hpp"

namespace pushonce::gateway {

struct gateway_state;

/// Before the body: the token's signature (cached), bad tokens counted per client address
/// and an address over its limit answered 429 without a verification.
std::optional<http_response> gate_precheck(const http_request& req, gateway_state& st,
                                           const std::string& client);
boost::asio::awaitable<http_response> gate_route(http_request& req, gateway_state& st);
boost::asio::awaitable<http_response> gate_cookie_route(http_request& req, gateway_state& st);

/// Runs until st.stopping (or `timer` is cancelled): once a second, the renewals the gate's
/// checks asked for since the last batch, one batch (gate_renewals), so that a check no
/// other check follows is renewed too.
boost::asio::awaitable<void> flush_gate_renewals(gateway_state& st,
                                                 boost::asio::steady_timer& timer);

}  // namespace pushonce::gateway
