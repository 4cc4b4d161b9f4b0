#pragma once
// POST /api/publish (docs/protocol.md) as plain logic: the body → publish requests, results →
// the answer. The HTTP shell (http_routes.cpp) handles the key, the size limit and Redis.

#include <string>
#include <string_view>
#include <vector>

#include "core/outcome.hpp"
#include "core/publish_checks.hpp"
#include "gateway/protocol/http_error.hpp"

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

/// How much of a request went out. A batch is one publish.lua call per bus shard, each
/// all-or-nothing, so a batch that spans shards can be published in part.
enum class publish_outcome {
  all,   // every message is in the outbox (or a duplicate of one that is)
  none,  // nothing was published
  part,  // some messages were published, the others were not
};
publish_outcome publish_outcome_of(const std::vector<outcome<published>>& results);

/// The answer for the results of publish_batch, in the body's shape:
///  - all: 200, {"id","duplicate"} or {"results":[{"id","duplicate"}...]};
///  - none: the first failure's error answer (http_error: Redis unavailable → 503
///    {"error":"unavailable"}, internal → 500): nothing of the request was published;
///  - part: 207 {"results":[...]} in the batch's order, a published message's result as
///    for 200, a refused one's {"error","message"} as its error answer would say.
/// `retry` (Retry-After) when a refused message was refused for a Redis condition.
http_answer render_publish_results(const publish_body& body,
                                   const std::vector<outcome<published>>& results);

}  // namespace pushonce::gateway
