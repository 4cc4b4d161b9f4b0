#pragma once
// The probe routes of the route table (http_routes): GET/HEAD /healthz, GET/HEAD /readyz
// and GET /metrics.

#include <boost/asio/awaitable.hpp>

#include "gateway/protocol/http_response.hpp"

namespace pushonce::gateway {

struct gateway_state;

/// "ok" 200 when Redis answered a PING within the last second, else 503.
boost::asio::awaitable<http_response> healthz_route(http_request& req, gateway_state& st);
/// The readiness answer (readiness.hpp) with its reasons; 503 carries Retry-After: 1.
boost::asio::awaitable<http_response> readyz_route(http_request& req, gateway_state& st);
/// Prometheus text: this gateway's counters, the system's (NS:stats) and every queue's.
boost::asio::awaitable<http_response> metrics_route(http_request& req, gateway_state& st);

}  // namespace pushonce::gateway
