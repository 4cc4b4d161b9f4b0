#pragma once
// How a custom publish batch goes to Redis, decided without Redis: which requests fail
// validation, the valid ones grouped by bus shard (each shard's in the batch's order, with
// the positions their results go to), and where the request's rate-limit token is taken.
// core/publisher carries the plan out.

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include "core/lua/rate_limit.hpp"
#include "core/outcome.hpp"
#include "core/publish_checks.hpp"

namespace pushonce {

/// Where the request's token is taken.
enum class token_step {
  none,    // no rate limit for this request
  inside,  // by publish.lua itself, in the one call that publishes (one round trip)
  before,  // by rate_limit.lua, before any publish.lua call
};

/// The valid requests of one bus shard, in the batch's order, and where their results go.
struct shard_batch {
  unsigned shard = 0;
  std::vector<publish_request> items;
  std::vector<std::size_t> slots;  // index in the batch (and in publish_plan::results)
};

struct publish_plan {
  /// One per request, in order: a validation failure, or a placeholder the shard's reply
  /// fills in.
  std::vector<outcome<published>> results;
  std::vector<shard_batch> shards;  // non-empty ones, by ascending shard
  token_step token = token_step::none;
  /// Redis Cluster: each shard publishes on its own slot (SPUBLISH) and NS:stats, in
  /// another slot, is counted after the calls; on a single Redis publish.lua counts it.
  bool cluster = false;
};

/// Plans `batch` for `shards` bus shards. The token is taken inside publish.lua only when
/// that one call is the whole request: a single Redis (the bucket is in another slot of a
/// cluster) and one shard (pipelined calls of several shards would publish before the
/// first one's token is known).
publish_plan plan_publish(std::vector<publish_request> batch, unsigned shards, bool cluster,
                          bool rate_limited);

/// What the answer of rate_limit.lua (token_step::before) means for the request.
enum class token_verdict {
  publish,         // a token was taken
  publish_anyway,  // the bucket failed to answer (not for lack of Redis): let it through
  unavailable,     // Redis is unavailable: every valid request fails with it now (503)
  limited,         // no token: nothing is published
};
token_verdict verdict_of(const outcome<lua::rate_decision>& taken);

}  // namespace pushonce
