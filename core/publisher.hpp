#pragma once
// Custom publishes (PROTOCOL.md `publish`, POST /api/publish): one publish.lua call per
// message in the user's bus shard, with an optional idempotency key scoped to the user.
// A batch is pipelined on one connection; scripts of one shard run in order, so a key
// repeated inside a batch is a duplicate of its first use.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/outcome.hpp"

namespace pushonce {

struct publish_request {
  std::string user;
  std::string data_json;  // any JSON value, already validated and serialised
  std::optional<std::string> idempotency_key;
};

struct published {
  std::string id;
  bool duplicate = false;
};

struct publisher_options {
  unsigned shards = 1;
  std::chrono::milliseconds dedup_window{std::chrono::hours(24)};
  long long outbox_maxlen = 100000;
};

class publisher {
 public:
  publisher(std::shared_ptr<redis::connection> conn, keys k, publisher_options opts = {});

  /// Checks a request without Redis: user name, key length (1-200), data present.
  static std::optional<failure> validate(const publish_request& r);

  boost::asio::awaitable<outcome<published>> publish(publish_request r);
  /// All or per-message results in order; every request must already be valid.
  boost::asio::awaitable<std::vector<outcome<published>>> publish_batch(
      std::vector<publish_request> batch);

 private:
  redis::command command_for(const publish_request& r) const;

  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  publisher_options opts_;
};

}  // namespace pushonce
