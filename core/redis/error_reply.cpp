#include "core/redis/error_reply.hpp"

#include <utility>

namespace pushonce::redis {
namespace {

struct known {
  std::string_view code;
  error_reply_class what;
  std::string_view description;
};

constexpr known codes[] = {
    {"READONLY", error_reply_class::failover, "the server is a read-only replica"},
    {"LOADING", error_reply_class::failover, "the server is loading its data set"},
    {"MASTERDOWN", error_reply_class::failover, "the replica lost its master"},
    {"OOM", error_reply_class::unavailable, "Redis is out of memory (maxmemory)"},
    {"BUSY", error_reply_class::unavailable, "Redis is busy running a script"},
    {"MISCONF", error_reply_class::unavailable, "Redis refuses writes after failed saves"},
    {"CLUSTERDOWN", error_reply_class::unavailable, "a slot of the cluster has no master"},
    {"TRYAGAIN", error_reply_class::unavailable, "the keys' slot is being migrated"},
    {"NOREPLICAS", error_reply_class::unavailable,
     "too few replicas follow the master (min-replicas-to-write)"},
    {"MOVED", error_reply_class::unavailable, "the keys' slot moved again and again"},
    {"ASK", error_reply_class::unavailable, "the keys' slot is being migrated (ASK again)"},
    {"NOPERM", error_reply_class::denied,
     "the Redis user's ACL refuses a command or key: an operator must grant it"},
};

}  // namespace

error_reply_class classify_error_code(std::string_view code) {
  for (const auto& k : codes)
    if (k.code == code) return k.what;
  return error_reply_class::ordinary;
}

std::string_view describe_error_code(std::string_view code) {
  for (const auto& k : codes)
    if (k.code == code) return k.description;
  return "an error reply";
}

}  // namespace pushonce::redis
