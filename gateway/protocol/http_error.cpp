#include "gateway/protocol/http_error.hpp"

#include <boost/json.hpp>

#include "core/queue_refusals.hpp"

namespace pushonce::gateway {

http_status http_status_of(errc e) {
  if (e == errc_expired) return {409, "expired"};
  if (e == errc_released) return {409, "released"};
  switch (e) {
    case errc::bad_request:
      return {400, "bad_request"};
    case errc::unauthorized:
      return {401, "unauthorized"};
    case errc::forbidden:
      return {403, "forbidden"};
    case errc::not_found:
      return {404, "not_found"};
    case errc::too_large:
      return {413, "too_large"};
    case errc::rate_limited:
      return {429, "rate_limited"};
    // Redis did not answer, or refuses work (OOM, BUSY, failover ...); the gateway over its
    // connection limits: the same for the client, try again shortly.
    case errc::redis_unavailable:
    case errc::overloaded:
      return {503, "unavailable"};
    default:
      return {500, "internal"};
  }
}

std::string error_json(errc e, std::string_view message) {
  boost::json::object o;
  o["error"] = http_status_of(e).code;
  o["message"] = message;
  return boost::json::serialize(o);
}

http_answer error_answer(errc e, std::string_view message) {
  return {http_status_of(e).status, error_json(e, message)};
}

}  // namespace pushonce::gateway
