#include "core/redis/error.hpp"

#include <string>

namespace pushonce::redis {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "pushonce.redis"; }

  std::string message(int value) const override {
    switch (static_cast<error>(value)) {
      case error::timeout:
        return "no reply from Redis within the command timeout";
      case error::disconnected:
        return "the Redis connection dropped";
      case error::protocol:
        return "Redis sent a malformed reply";
      case error::queue_full:
        return "too many Redis commands waiting";
      case error::stopped:
        return "the Redis client was stopped";
      case error::refused:
        return "Redis refused work for now (busy in a script, loading, out of memory, or a "
               "read-only replica)";
      case error::moved:
        return "the channel's cluster slot is served by another node";
      case error::not_master:
        return "the server the sentinels named is not (or no longer) a master";
      case error::login_refused:
        return "Redis refused the login (AUTH or SELECT)";
    }
    return "unknown Redis error";
  }
};

}  // namespace

const std::error_category& error_category() {
  static const category instance;
  return instance;
}

std::error_code make_error_code(error e) {
  return {static_cast<int>(e), error_category()};
}

}  // namespace pushonce::redis
