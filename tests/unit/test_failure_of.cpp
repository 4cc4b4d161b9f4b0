#include "core/redis/failure_of.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "core/redis/error.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_failure_of_unit {

using namespace pushonce;

namespace {
failure of(const char* text) {
  return failure_of(redis::result{{}, redis::reply::make_error(text)});
}
}  // namespace

TEST_CASE("failure_of: a transport error is redis_unavailable") {
  for (auto e : {redis::error::timeout, redis::error::disconnected, redis::error::queue_full,
                 redis::error::stopped, redis::error::refused, redis::error::protocol}) {
    redis::result down{redis::make_error_code(e), {}};
    auto f = failure_of(down);
    CHECK(f.code == errc::redis_unavailable);
    CHECK(f.message.rfind("Redis did not answer: ", 0) == 0);
  }
}

TEST_CASE("failure_of: a script's code becomes its errc, with the message") {
  auto f = of("fenced a newer leader acts on this queue");
  CHECK(f.code == errc::fenced);
  CHECK(f.message == "a newer leader acts on this queue");
  CHECK(of("already_queued ann is already in queue q").code == errc::already_queued);
  CHECK(of("already_assigned ann holds r1").code == errc::already_assigned);
  CHECK(of("not_queued ann").code == errc::not_queued);
  CHECK(of("not_found no such queue").code == errc::not_found);
  CHECK(of("not_assigned ann").code == errc::not_assigned);
  CHECK(of("not_dead the message was already replayed").code == errc::not_dead);
  CHECK(of("exists r1").code == errc::exists);
  CHECK(of("exhausted no source index left (max 4095)").code == errc::exhausted);
  CHECK(of("bad_request ids must be decimal").code == errc::bad_request);
  CHECK(of("rate_limited 250").code == errc::rate_limited);
  // A code alone: the message is the code.
  auto bare = of("fenced");
  CHECK(bare.code == errc::fenced);
  CHECK(bare.message == "fenced");
}

TEST_CASE("failure_of: Redis refusing work is redis_unavailable, not internal") {
  auto oom = of("OOM command not allowed when used memory > 'maxmemory'.");
  CHECK(oom.code == errc::redis_unavailable);
  CHECK(oom.message.find("OOM") != std::string::npos);
  CHECK(of("BUSY Redis is busy running a script.").code == errc::redis_unavailable);
  CHECK(of("MISCONF Errors writing to the AOF file").code == errc::redis_unavailable);
  CHECK(of("READONLY You can't write against a read only replica.").code ==
        errc::redis_unavailable);
  CHECK(of("LOADING Redis is loading the dataset in memory").code == errc::redis_unavailable);
  CHECK(of("MASTERDOWN Link with MASTER is down").code == errc::redis_unavailable);
  // A Redis Cluster slot without a master (after the cluster client's retries): 503, not 500.
  CHECK(of("CLUSTERDOWN The cluster is down").code == errc::redis_unavailable);
  CHECK(of("CLUSTERDOWN Hash slot not served").code == errc::redis_unavailable);
  CHECK(of("TRYAGAIN Multiple keys request during rehashing of slot").code ==
        errc::redis_unavailable);
}

TEST_CASE("failure_of: NOREPLICAS, NOPERM and redirections left over are redis_unavailable") {
  auto norep = of("NOREPLICAS Not enough good replicas to write.");
  CHECK(norep.code == errc::redis_unavailable);
  CHECK(norep.message.find("NOREPLICAS") != std::string::npos);
  // A script's redis.call refused the same way (Redis 7 keeps the code, adds the script).
  CHECK(
      of("NOREPLICAS Not enough good replicas to write. script: 1f2e, on @user_script:40.").code ==
      errc::redis_unavailable);
  // An ACL refusal: still 503 for the caller, and the message says whose fix it is.
  auto noperm = of("NOPERM this user has no permissions to run the 'xadd' command");
  CHECK(noperm.code == errc::redis_unavailable);
  CHECK(noperm.message.find("NOPERM") != std::string::npos);
  CHECK(noperm.message.find("operator") != std::string::npos);
  CHECK(of("MOVED 3999 127.0.0.1:6381").code == errc::redis_unavailable);
  CHECK(of("ASK 3999 127.0.0.1:6381").code == errc::redis_unavailable);
}

TEST_CASE("failure_of: Redis's own errors and unknown replies are internal, text kept") {
  auto err = of("ERR unknown command");
  CHECK(err.code == errc::internal);
  CHECK(err.message == "ERR unknown command");
  CHECK(of("NOSCRIPT No matching script").code == errc::internal);
  CHECK(of("WRONGTYPE Operation against a key").code == errc::internal);
  auto busykey = of("BUSYKEY Target key name already exists.");
  CHECK(busykey.code == errc::internal);
  CHECK(busykey.message == "BUSYKEY Target key name already exists.");
  // A word that only looks like a code of ours is not one: codes are exact.
  CHECK(of("Fenced x").code == errc::internal);
  // Not an error reply at all.
  CHECK(failure_of(redis::result{{}, redis::reply{}}).code == errc::internal);
}

}  // namespace test_failure_of_unit
