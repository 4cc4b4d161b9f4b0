// pushonce-worker's command line (worker/worker_options.hpp): defaults, and every bad value
// a usage error.

#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "core/config.hpp"
#include "worker/worker_options.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_worker_options_unit {

using namespace pushonce;
using namespace pushonce::worker;

namespace {

worker_command parse_worker(std::vector<std::string> args) {
  args.insert(args.begin(), "pushonce-worker");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  auto cl =
      parse_command_line(static_cast<int>(argv.size()), argv.data(), worker_option_description());
  return parse_worker_options(cl);
}

}  // namespace

TEST_CASE("worker options: the defaults") {
  auto c = parse_worker({"--id", "w1"});
  CHECK(c.opts.id == "w1");
  CHECK(c.opts.concurrency == 64);
  CHECK(c.opts.max_batch == 200);
  CHECK(c.opts.max_queued_bytes == (64u << 20));
  CHECK(c.opts.claim.lease == std::chrono::milliseconds(5000));
  CHECK(c.opts.claim.max_attempts == 5);
  CHECK(c.opts.claim.inbox_maxlen == 1000);
  CHECK(c.opts.sweep_interval == std::chrono::milliseconds(1000));
  CHECK_FALSE(c.opts.trace);
  CHECK_FALSE(c.metrics_at);
}

TEST_CASE("worker options: a generated id when none is given") {
  auto c = parse_worker({});
  CHECK(c.opts.id.rfind("w-", 0) == 0);
}

TEST_CASE("worker options: values given") {
  auto c = parse_worker({"--id", "w2", "--concurrency", "8", "--lease-ms", "2000", "--claim-batch",
                         "50", "--trace", "--wait-replicas", "2", "--wait-replicas-timeout-ms",
                         "250", "--metrics-listen", "127.0.0.1:9100"});
  CHECK(c.opts.concurrency == 8);
  CHECK(c.opts.claim.lease == std::chrono::milliseconds(2000));
  CHECK(c.opts.max_batch == 50);
  CHECK(c.opts.trace);
  CHECK(c.opts.claim.wait_replicas == 2);
  CHECK(c.opts.claim.wait_timeout == std::chrono::milliseconds(250));
  REQUIRE(c.metrics_at);
  CHECK(c.metrics_at->port == 9100);
  CHECK_FALSE(parse_worker({"--trace", "--no-trace"}).opts.trace);
}

TEST_CASE("worker options: bad values are usage errors") {
  CHECK_THROWS_AS(parse_worker({"--id", "bad name"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--concurrency", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--max-queued-bytes", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--claim-batch", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--claim-batch", "201"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--lease-ms", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--inbox-maxlen", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--inbox-idle-ms", "-1"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--max-attempts", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--sweep-interval-ms", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--wait-replicas", "17"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--wait-replicas", "-1"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--wait-replicas-timeout-ms", "0"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--wait-replicas-timeout-ms", "60001"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--metrics-listen", "nowhere"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"extra"}), usage_error);
  CHECK_THROWS_AS(parse_worker({"--concurrency", "many"}), usage_error);
}

TEST_CASE("worker options: the dedup window must be longer than twice the lease") {
  CHECK_THROWS_AS(parse_worker({"--lease-ms", "5000", "--dedup-window-ms", "10000",
                                "--outbox-retention-ms", "5000"}),
                  usage_error);
  CHECK_NOTHROW(parse_worker(
      {"--lease-ms", "4000", "--dedup-window-ms", "10000", "--outbox-retention-ms", "5000"}));
}

TEST_CASE("worker options: PUSHONCE_WAIT_REPLICAS when the flag is not given") {
  ::setenv("PUSHONCE_WAIT_REPLICAS", "3", 1);
  CHECK(parse_worker({}).opts.claim.wait_replicas == 3);
  CHECK(parse_worker({"--wait-replicas", "1"}).opts.claim.wait_replicas == 1);
  ::setenv("PUSHONCE_WAIT_REPLICAS", "x", 1);
  CHECK_THROWS_AS(parse_worker({}), usage_error);
  ::unsetenv("PUSHONCE_WAIT_REPLICAS");
}

}  // namespace test_worker_options_unit
