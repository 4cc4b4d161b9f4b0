#include "gateway/http/readiness.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_readiness_unit {

using pushonce::gateway::judge_readiness;
using pushonce::gateway::readiness_inputs;

namespace {
readiness_inputs inputs(bool redis_ok, bool subscribed, bool draining) {
  readiness_inputs in;
  in.redis_ok = redis_ok;
  in.subscribed = subscribed;
  in.draining = draining;
  return in;
}
}  // namespace

TEST_CASE("readiness: ready only with Redis, the subscription and no drain") {
  auto ok = judge_readiness(inputs(true, true, false));
  CHECK(ok.status == 200);
  CHECK(ok.body == R"({"ready":true,"redis":true,"subscribed":true,"draining":false})");

  for (auto in : {inputs(false, true, false), inputs(true, false, false), inputs(true, true, true),
                  inputs(false, false, true)}) {
    auto a = judge_readiness(in);
    CHECK(a.status == 503);
    auto v = boost::json::parse(a.body).as_object();
    CHECK(v.at("ready") == false);
    CHECK(v.at("redis") == in.redis_ok);
    CHECK(v.at("subscribed") == in.subscribed);
    CHECK(v.at("draining") == in.draining);
  }
}

TEST_CASE("readiness: draining wins even when everything else is fine") {
  CHECK(judge_readiness(inputs(true, true, true)).status == 503);
}

TEST_CASE("readiness: on a Redis Cluster the sharded subscriber must hold its channels too") {
  auto in = inputs(true, true, false);
  in.sharded = true;
  auto ok = judge_readiness(in);
  CHECK(ok.status == 200);
  CHECK(ok.body ==
        R"({"ready":true,"redis":true,"subscribed":true,"draining":false,"sharded":true})");

  in.sharded = false;  // a channel's node is down, or the slot map was not read yet
  auto down = judge_readiness(in);
  CHECK(down.status == 503);
  auto v = boost::json::parse(down.body).as_object();
  CHECK(v.at("ready") == false);
  CHECK(v.at("sharded") == false);

  // On a single Redis the field is absent, not false.
  CHECK_FALSE(boost::json::parse(judge_readiness(inputs(true, true, false)).body)
                  .as_object()
                  .contains("sharded"));
}

TEST_CASE("readiness: a Redis that answers but refuses writes makes the gateway not ready") {
  auto in = inputs(true, true, false);
  in.writable = false;
  in.redis_error = "OOM command not allowed when used memory > 'maxmemory'.";
  auto a = judge_readiness(in);
  CHECK(a.status == 503);
  auto v = boost::json::parse(a.body).as_object();
  CHECK(v.at("ready") == false);
  CHECK(v.at("redis") == true);
  CHECK(v.at("writable") == false);
  CHECK(v.at("reason") ==
        "redis refuses writes: OOM command not allowed when used memory > 'maxmemory'.");

  auto down = inputs(false, true, false);
  down.redis_error = "timed out";
  CHECK(boost::json::parse(judge_readiness(down).body).as_object().at("reason") ==
        "redis did not answer: timed out");
  // Ready: no reason, no "writable" (the body is unchanged).
  auto ok = boost::json::parse(judge_readiness(inputs(true, true, false)).body).as_object();
  CHECK_FALSE(ok.contains("reason"));
  CHECK_FALSE(ok.contains("writable"));
}

TEST_CASE("readiness: Redis Cluster slots without a master make the gateway not ready") {
  auto in = inputs(true, true, false);
  in.slots_without_master = "5461-10922";
  auto a = judge_readiness(in);
  CHECK(a.status == 503);
  auto v = boost::json::parse(a.body).as_object();
  CHECK(v.at("ready") == false);
  CHECK(v.at("slots_without_master") == "5461-10922");
  CHECK(v.at("reason") == "redis cluster slots without a master: 5461-10922");
  // Every slot served: ready, and the field is left out.
  in.slots_without_master = "";
  auto ok = judge_readiness(in);
  CHECK(ok.status == 200);
  CHECK_FALSE(boost::json::parse(ok.body).as_object().contains("slots_without_master"));
}

}  // namespace test_gateway_readiness_unit
