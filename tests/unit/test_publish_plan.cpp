// plan_publish: how a custom publish batch goes to Redis (validation, grouping by bus shard,
// where the rate-limit token is taken), and what rate_limit.lua's answer means.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/publish_plan.hpp"

using namespace pushonce;

namespace {

publish_request request_for(std::string user, std::string data = "1") {
  return publish_request{std::move(user), std::move(data), std::nullopt};
}

/// A user name of the given shard (of `shards`), other than `avoid`.
std::string user_of_shard(unsigned shard, unsigned shards, int from = 0) {
  for (int i = from;; ++i) {
    auto name = "u" + std::to_string(i);
    if (keys::shard_of(name, shards) == shard) return name;
  }
}

}  // namespace

TEST_CASE(
    "publish plan: invalid requests fail in place, the valid ones go to their shard in order") {
  const unsigned shards = 4;
  std::vector<publish_request> batch;
  auto a = user_of_shard(2, shards);
  auto b = user_of_shard(0, shards);
  batch.push_back(request_for(a, "1"));
  batch.push_back(request_for("bad user name with spaces"));
  batch.push_back(request_for(b, "2"));
  batch.push_back(request_for(a, "3"));
  auto plan = plan_publish(std::move(batch), shards, false, false);

  REQUIRE(plan.results.size() == 4);
  CHECK(plan.results[0].has_value());
  REQUIRE_FALSE(plan.results[1].has_value());
  CHECK(plan.results[1].error().code == errc::bad_request);
  CHECK(plan.results[2].has_value());
  CHECK(plan.results[3].has_value());

  REQUIRE(plan.shards.size() == 2);  // ascending shard, empty ones left out
  CHECK(plan.shards[0].shard == 0);
  CHECK(plan.shards[0].slots == std::vector<std::size_t>{2});
  CHECK(plan.shards[1].shard == 2);
  CHECK(plan.shards[1].slots == std::vector<std::size_t>{0, 3});
  REQUIRE(plan.shards[1].items.size() == 2);
  CHECK(plan.shards[1].items[0].data_json == "1");  // the batch's order within a shard
  CHECK(plan.shards[1].items[1].data_json == "3");
  CHECK(plan.token == token_step::none);
  CHECK_FALSE(plan.cluster);
}

TEST_CASE("publish plan: the token is taken inside publish.lua only when one call is the request") {
  const unsigned shards = 4;
  auto one_shard = [&] {
    std::vector<publish_request> b;
    b.push_back(request_for(user_of_shard(1, shards)));
    b.push_back(request_for(user_of_shard(1, shards, 100)));
    return b;
  };
  auto two_shards = [&] {
    std::vector<publish_request> b;
    b.push_back(request_for(user_of_shard(1, shards)));
    b.push_back(request_for(user_of_shard(3, shards)));
    return b;
  };
  CHECK(plan_publish(one_shard(), shards, false, true).token == token_step::inside);
  // Pipelined calls of two shards would publish before the first one's token is known.
  CHECK(plan_publish(two_shards(), shards, false, true).token == token_step::before);
  // The bucket is in another slot of a cluster.
  auto cluster = plan_publish(one_shard(), shards, true, true);
  CHECK(cluster.token == token_step::before);
  CHECK(cluster.cluster);
  CHECK(plan_publish(one_shard(), shards, false, false).token == token_step::none);
}

TEST_CASE("publish plan: a batch with nothing valid takes no token and has no call") {
  std::vector<publish_request> batch;
  batch.push_back(request_for(""));
  batch.push_back(request_for("u1", ""));
  auto plan = plan_publish(std::move(batch), 2, false, true);
  CHECK(plan.shards.empty());
  CHECK(plan.token == token_step::none);
  REQUIRE(plan.results.size() == 2);
  CHECK_FALSE(plan.results[0].has_value());
  CHECK_FALSE(plan.results[1].has_value());
  CHECK(plan_publish({}, 2, false, true).results.empty());
}

TEST_CASE("publish plan: the rate limiter's answer") {
  CHECK(verdict_of(lua::rate_decision{true, {}}) == token_verdict::publish);
  CHECK(verdict_of(lua::rate_decision{false, std::chrono::milliseconds(250)}) ==
        token_verdict::limited);
  CHECK(verdict_of(failure{errc::redis_unavailable, "down"}) == token_verdict::unavailable);
  // Any other failure of the bucket lets the request through (the publish answers for Redis).
  CHECK(verdict_of(failure{errc::internal, "odd reply"}) == token_verdict::publish_anyway);
}
