// pushonce-bench's command line (bench/bench_options.hpp): every bad value is a usage error.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "bench/bench_options.hpp"
#include "core/config.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bench_options_unit {

using namespace pushonce;
using namespace pushonce::bench;

namespace {

bench_options parse(std::vector<std::string> args) {
  args.insert(args.begin(), "pushonce-bench");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  auto cl =
      parse_command_line(static_cast<int>(argv.size()), argv.data(), bench_option_description());
  return parse_bench_options(cl.vm, cl.positional);
}

}  // namespace

TEST_CASE("bench options: a fanout with its defaults") {
  auto o =
      parse({"fanout", "--gateway", "127.0.0.1:8080,ws://127.0.0.1:8081/ws", "--api-key", "k"});
  CHECK(o.what == bench_options::mode::fanout);
  REQUIRE(o.gateways.size() == 2);
  CHECK(o.gateways[1].port == 8081);
  CHECK(o.publish.port == 8080);
  CHECK(o.sessions == 200);
  CHECK(o.users == 100);
  CHECK(o.messages == 20000);
  CHECK(o.batch == 100);
  CHECK(o.rate == 0);
  CHECK(o.jwt_secret.empty());
}

TEST_CASE("bench options: --rate and --duration give the message count") {
  auto o = parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--rate", "6500", "--duration",
                  "2.5", "--source", "127.0.0.2,127.0.0.3", "--threads", "2", "--json"});
  CHECK(o.messages == 16250);
  CHECK(o.duration.count() == 2500);
  CHECK(o.sources.size() == 2);
  CHECK(o.threads == 2);
  CHECK(o.json);
  auto p = parse({"fanout", "--gateway", "http://h:1", "--publish-url", "http://p:2/api/publish",
                  "--api-key", "k"});
  CHECK(p.publish.host == "p");
  CHECK(p.publish.port == 2);
}

TEST_CASE("bench options: --transport") {
  CHECK_FALSE(parse({"fanout", "--gateway", "h:1", "--api-key", "k"}).sse);
  CHECK_FALSE(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--transport", "ws"}).sse);
  CHECK(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--transport", "sse"}).sse);
  CHECK(parse({"idle", "--gateway", "h:1", "--transport", "sse"}).sse);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--transport", "tcp"}),
                  usage_error);
}

TEST_CASE("bench options: idle and floor") {
  auto i = parse({"idle", "--gateway", "h:1", "--sessions", "5000", "--pids", "12,34"});
  CHECK(i.messages == 0);
  CHECK(i.users == 5000);
  CHECK(i.pids == std::vector<pid_t>{12, 34});
  auto f = parse({"floor", "--duplicate-every", "7", "--rate", "1000"});
  CHECK(f.what == bench_options::mode::floor);
  CHECK(f.duplicate_every == 7);
  CHECK(f.api_key == "floor");
}

TEST_CASE("bench options: bad command lines are usage errors") {
  CHECK_THROWS_AS(parse({}), usage_error);
  CHECK_THROWS_AS(parse({"queue", "--gateway", "h:1"}), usage_error);
  CHECK_THROWS_AS(parse({"fanin", "--gateway", "h:1"}), usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--api-key", "k"}), usage_error);  // no gateway
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h"}), usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:0", "--api-key", "k"}), usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "wss://h:443", "--api-key", "k"}), usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--batch", "1001"}),
                  usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--rate", "-1"}),
                  usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--sessions", "x"}),
                  usage_error);
  CHECK_THROWS_AS(
      parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--messages", "5", "--duration", "3"}),
      usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--jwt-secret", "short"}),
                  usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--user-prefix", "a b"}),
                  usage_error);
  CHECK_THROWS_AS(parse({"fanout", "--gateway", "h:1", "--api-key", "k", "--duplicate-every", "3"}),
                  usage_error);
  CHECK_THROWS_AS(parse({"floor", "--gateway", "h:1"}), usage_error);
  CHECK_THROWS_AS(parse({"idle", "--gateway", "h:1", "--pids", "-3"}), usage_error);
}

}  // namespace test_bench_options_unit
