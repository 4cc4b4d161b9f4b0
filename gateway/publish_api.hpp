#pragma once
// POST /api/publish (docs/protocol.md) as plain logic: the body → publish requests, results →
// the answer. The HTTP shell (http_routes.cpp) handles the key, the size limit and Redis.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/outcome.hpp"
#include "core/publisher.hpp"

namespace pushonce::gateway {

inline constexpr std::size_t max_publish_batch = 1000;
inline constexpr std::size_t max_publish_body = 1u << 20;

struct publish_body {
  bool batch = false;  // {"messages":[...]} rather than one message
  std::vector<publish_request> requests;
};

/// The requests of a body, or a failure when anything in it is wrong: code bad_request, or
/// too_large when a message's serialised data is over `max_data_bytes` (answered 413). The
/// whole body is checked before anything is published: then nothing of it is.
outcome<publish_body> parse_publish_body(std::string_view body,
                                         std::size_t max_data_bytes = 64 * 1024);

struct http_answer {
  unsigned status = 200;
  std::string body;  // JSON
};

/// The answer for the results of publish_batch, in the body's shape. A failure of Redis
/// → 503 {"error":"unavailable"}; any other failure → 500.
http_answer render_publish_results(const publish_body& body,
                                   const std::vector<outcome<published>>& results);

/// {"error":code,"message":message}
std::string error_json(std::string_view code, std::string_view message);

}  // namespace pushonce::gateway
