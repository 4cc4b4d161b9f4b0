#include "gateway/readiness.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

using pushonce::gateway::judge_readiness;
using pushonce::gateway::readiness_inputs;

TEST_CASE("readiness: ready only with Redis, the subscription and no drain") {
  auto ok = judge_readiness({true, true, false});
  CHECK(ok.status == 200);
  CHECK(ok.body == R"({"ready":true,"redis":true,"subscribed":true,"draining":false})");

  for (auto in : {readiness_inputs{false, true, false}, readiness_inputs{true, false, false},
                  readiness_inputs{true, true, true}, readiness_inputs{false, false, true}}) {
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
  CHECK(judge_readiness({true, true, true}).status == 503);
}
