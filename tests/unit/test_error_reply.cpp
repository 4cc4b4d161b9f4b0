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

}  // namespace test_error_reply_unit
