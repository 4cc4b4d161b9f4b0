#include "core/publish_plan.hpp"

#include "core/keys.hpp"

namespace pushonce {

publish_plan plan_publish(std::vector<publish_request> batch, unsigned shards, bool cluster,
                          bool rate_limited) {
  publish_plan plan;
  plan.cluster = cluster;
  plan.results.reserve(batch.size());
  std::vector<shard_batch> by_shard(shards);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& r = batch[i];
    if (auto f = validate_publish(r)) {
      plan.results.emplace_back(*f);
      continue;
    }
    plan.results.emplace_back(published{});
    auto& to = by_shard[keys::shard_of(r.user, shards)];
    to.items.push_back(std::move(r));
    to.slots.push_back(i);
  }
  for (unsigned shard = 0; shard < shards; ++shard) {
    if (by_shard[shard].items.empty()) continue;
    by_shard[shard].shard = shard;
    plan.shards.push_back(std::move(by_shard[shard]));
  }
  if (rate_limited && !plan.shards.empty())
    plan.token = !cluster && plan.shards.size() == 1 ? token_step::inside : token_step::before;
  return plan;
}

token_verdict verdict_of(const outcome<lua::rate_decision>& taken) {
  if (!taken)
    return taken.error().code == errc::redis_unavailable ? token_verdict::unavailable
                                                         : token_verdict::publish_anyway;
  return taken.value().allowed ? token_verdict::publish : token_verdict::limited;
}

}  // namespace pushonce
