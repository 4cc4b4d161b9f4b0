#include "core/redis/error_reply.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "core/outcome.hpp"

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

TEST_CASE("failure_of: Redis refusing work is redis_unavailable, not internal") {
  auto of = [](const char* text) {
    return failure_of(redis::result{{}, redis::reply::make_error(text)});
  };
  auto oom = of("OOM command not allowed when used memory > 'maxmemory'.");
  CHECK(oom.kind() == errc::redis_unavailable);
  CHECK(oom.message.find("OOM") != std::string::npos);
  CHECK(of("BUSY Redis is busy running a script.").kind() == errc::redis_unavailable);
  CHECK(of("READONLY You can't write against a read only replica.").kind() ==
        errc::redis_unavailable);
  CHECK(of("LOADING Redis is loading the dataset in memory").kind() == errc::redis_unavailable);
  CHECK(of("MASTERDOWN Link with MASTER is down").kind() == errc::redis_unavailable);
  // A Redis Cluster slot without a master (after the cluster client's retries): 503, not 500.
  CHECK(of("CLUSTERDOWN The cluster is down").kind() == errc::redis_unavailable);
  CHECK(of("CLUSTERDOWN Hash slot not served").kind() == errc::redis_unavailable);
  CHECK(of("TRYAGAIN Multiple keys request during rehashing of slot").kind() ==
        errc::redis_unavailable);
  CHECK(of("ERR unknown command").kind() == errc::internal);
  CHECK(of("BUSYKEY Target key name already exists.").kind() == errc::other);
}

}  // namespace test_error_reply_unit
