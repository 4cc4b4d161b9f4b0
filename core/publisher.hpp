#pragma once
// Custom publishes (docs/protocol.md `publish`, POST /api/publish): one publish.lua call per bus
// shard for a whole batch (one bus payload per shard), with an optional idempotency key
// scoped to the user. Messages of one shard keep their order, so a key repeated inside a
// batch is a duplicate of its first use.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/publish.hpp"
#include "core/outcome.hpp"
#include "core/publish_checks.hpp"
#include "core/redis/connection.hpp"
#include "core/retention.hpp"

namespace pushonce {

/// What publish_checked answers: the per-message results, or `limited` (the wait until the
/// request's token) with nothing published and no results.
struct publish_answer {
  std::optional<std::chrono::milliseconds> limited;
  std::vector<outcome<published>> results;
};

struct publisher_options {
  pushonce::retention retention;
};

class publisher {
 public:
  publisher(std::shared_ptr<redis::connection> conn, keys k, publisher_options opts = {});

  boost::asio::awaitable<outcome<published>> publish(publish_request r);
  /// All or per-message results in order; a request that fails validate_publish gets
  /// its failure.
  boost::asio::awaitable<std::vector<outcome<published>>> publish_batch(
      std::vector<publish_request> batch);
  /// publish_batch behind the request's token bucket (`rate`: one token per call). On a
  /// single Redis with one bus shard in the batch, publish.lua takes the token and counts
  /// the messages in NS:stats in the same call: one round trip for the request. Otherwise
  /// rate_limit.lua runs first and HINCRBY after. A bucket that fails to answer lets the
  /// request through (the publish then answers for Redis).
  boost::asio::awaitable<publish_answer> publish_checked(std::vector<publish_request> batch,
                                                         std::optional<lua::publish_rate> rate);

 private:
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  publisher_options opts_;
};

}  // namespace pushonce
