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
#include "core/retention.hpp"

namespace pushonce {

using publish_request = lua::publish_item;
using published = lua::publish_outcome;

struct publisher_options {
  unsigned shards = 1;
  pushonce::retention retention;
};

class publisher {
 public:
  publisher(std::shared_ptr<redis::connection> conn, keys k, publisher_options opts = {});

  /// Checks a request without Redis: user name, key length (1-200), data present.
  static std::optional<failure> validate(const publish_request& r);
  /// failure too_large when the serialised data is over `max_data_bytes`
  /// (common_options::max_data_bytes).
  static std::optional<failure> check_size(const publish_request& r, std::size_t max_data_bytes);

  boost::asio::awaitable<outcome<published>> publish(publish_request r);
  /// All or per-message results in order; every request must already be valid.
  boost::asio::awaitable<std::vector<outcome<published>>> publish_batch(
      std::vector<publish_request> batch);

 private:
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  publisher_options opts_;
};

}  // namespace pushonce
