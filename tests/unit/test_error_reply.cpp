#include "core/redis/error_reply.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_error_reply_unit {

using namespace pushonce;
using redis::error_reply_class;

TEST_CASE("classify_error_code: failover codes reconnect, OOM and BUSY are unavailable") {
  CHECK(redis::classify_error_code("READONLY") == error_reply_class::failover);
  CHECK(redis::classify_error_code("LOADING") == error_reply_class::failover);
  CHECK(redis::classify_error_code("MASTERDOWN") == error_reply_class::failover);
  CHECK(redis::classify_error_code("OOM") == error_reply_class::unavailable);
  CHECK(redis::classify_error_code("BUSY") == error_reply_class::unavailable);
  CHECK(redis::classify_error_code("MISCONF") == error_reply_class::unavailable);
  CHECK(redis::classify_error_code("CLUSTERDOWN") == error_reply_class::unavailable);
  CHECK(redis::classify_error_code("TRYAGAIN") == error_reply_class::unavailable);
  // Everything else is passed on as it is; codes are exact words.
  CHECK(redis::classify_error_code("BUSYKEY") == error_reply_class::ordinary);
  CHECK(redis::classify_error_code("busy") == error_reply_class::ordinary);
  CHECK(redis::classify_error_code("ERR") == error_reply_class::ordinary);
  CHECK(redis::classify_error_code("NOSCRIPT") == error_reply_class::ordinary);
  CHECK(redis::classify_error_code("already_queued") == error_reply_class::ordinary);
  CHECK(redis::classify_error_code("") == error_reply_class::ordinary);
  CHECK(redis::describe_error_code("OOM").find("memory") != std::string_view::npos);
  CHECK(redis::describe_error_code("BUSY").find("script") != std::string_view::npos);
}

TEST_CASE("classify_error_code: every refusal a write can meet has its class") {
  // min-replicas-to-write with the replicas away: the master is right, it refuses for now.
  CHECK(redis::classify_error_code("NOREPLICAS") == error_reply_class::unavailable);
  // Redirections left after the cluster client's retries (a reshard that keeps moving).
  CHECK(redis::classify_error_code("MOVED") == error_reply_class::unavailable);
  CHECK(redis::classify_error_code("ASK") == error_reply_class::unavailable);
  // An ACL that refuses a command or key: an operator's error, told apart for the log.
  CHECK(redis::classify_error_code("NOPERM") == error_reply_class::denied);
  CHECK(redis::describe_error_code("NOREPLICAS").find("replica") != std::string_view::npos);
  CHECK(redis::describe_error_code("NOPERM").find("ACL") != std::string_view::npos);
  CHECK(redis::describe_error_code("MOVED").find("slot") != std::string_view::npos);
  // Codes of the same family that are not refusals stay ordinary.
  CHECK(redis::classify_error_code("NOAUTH") == error_reply_class::ordinary);
  CHECK(redis::classify_error_code("WRONGPASS") == error_reply_class::ordinary);
  CHECK(redis::classify_error_code("EXECABORT") == error_reply_class::ordinary);
}

}  // namespace test_error_reply_unit
