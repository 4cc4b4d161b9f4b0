#pragma once
// The HTTP edge of the error model (docs/protocol.md "pushonce-gateway"): the status and
// the JSON body {"error":<code>,"message":...} of a refused request, written once from the
// errc. Pure (no sockets), so the publish API's parser and its fuzz target link it alone.

#include <string>
#include <string_view>

#include "core/errc.hpp"

namespace pushonce::gateway {

struct http_answer {
  unsigned status = 200;
  std::string body;    // JSON
  bool retry = false;  // a Redis condition: the answer carries Retry-After
};

/// The status and the body's "error" word of an errc: bad_request 400, unauthorized 401,
/// forbidden 403, not_found 404, too_large 413, rate_limited 429, redis_unavailable and
/// overloaded 503 "unavailable"; anything else 500 "internal".
struct http_status {
  unsigned status;
  std::string_view code;
};
http_status http_status_of(errc e);

/// {"error":code,"message":message} with the code of http_status_of.
std::string error_json(errc e, std::string_view message);
/// The status of http_status_of and error_json's body.
http_answer error_answer(errc e, std::string_view message);

}  // namespace pushonce::gateway
