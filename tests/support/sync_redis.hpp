#pragma once
// A synchronous Redis client (hiredis) for tests that look at keys from the outside. The
// wait helpers (wait.hpp) come with it: most callers poll keys with them.

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/wait.hpp"

namespace pushonce::test {

struct reply_free {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_free>;
struct context_free {
  void operator()(redisContext* c) const { redisFree(c); }
};
using context_ptr = std::unique_ptr<redisContext, context_free>;

/// What sync_redis throws when Redis cannot be reached or the connection fails.
class redis_unreachable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class sync_redis {
 public:
  /// Connects to 127.0.0.1:port (5 s timeouts); throws redis_unreachable.
  explicit sync_redis(std::uint16_t port);
  ~sync_redis();
  sync_redis(const sync_redis&) = delete;
  sync_redis& operator=(const sync_redis&) = delete;

  /// Runs a command; throws redis_unreachable when the connection fails.
  reply_ptr cmd(const std::vector<std::string>& words);
  /// An integer reply (EXISTS, XLEN, ...), or the count of PUBSUB NUMSUB channel; -1 else.
  long long integer(const std::vector<std::string>& words);
  /// A string or status reply; empty for any other reply.
  std::string text(const std::vector<std::string>& words);
  /// Subscribers of one channel (PUBSUB NUMSUB).
  long long subscribers(const std::string& channel);
  /// XRANGE key - +: {entry id, field "f"} of every entry.
  std::vector<std::pair<std::string, std::string>> inbox(const std::string& key);

 private:
  redisContext* ctx_ = nullptr;
};

/// A namespace no other test case (or concurrent test run) uses: "<prefix>-<what>-<pid>-<n>".
std::string unique_namespace(const std::string& prefix, const std::string& what);

}  // namespace pushonce::test
