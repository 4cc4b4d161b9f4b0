#include "core/publisher.hpp"

#include "core/log.hpp"
#include "core/lua/publish.hpp"
#include "core/lua/rate_limit.hpp"
#include "core/publish_plan.hpp"
#include "core/redis/failure_of.hpp"

namespace pushonce {

namespace asio = boost::asio;

publisher::publisher(std::shared_ptr<redis::connection> conn, keys k, publisher_options opts)
    : conn_(std::move(conn)), keys_(std::move(k)), opts_(opts) {}

asio::awaitable<outcome<published>> publisher::publish(publish_request r) {
  std::vector<publish_request> one;
  one.push_back(std::move(r));
  auto results = co_await publish_batch(std::move(one));
  co_return std::move(results.front());
}

asio::awaitable<std::vector<outcome<published>>> publisher::publish_batch(
    std::vector<publish_request> batch) {
  auto answer = co_await publish_checked(std::move(batch), std::nullopt);
  co_return std::move(answer.results);
}

asio::awaitable<publish_answer> publisher::publish_checked(std::vector<publish_request> batch,
                                                           std::optional<lua::publish_rate> rate) {
  auto plan = plan_publish(std::move(batch), keys_.shards(), conn_->is_cluster(), rate.has_value());
  publish_answer answer;
  auto& out = answer.results;
  out = std::move(plan.results);
  if (plan.shards.empty()) co_return answer;

  if (plan.token == token_step::before) {
    auto taken = co_await lua::take_tokens(*conn_, rate->key, rate->rate, rate->burst);
    switch (verdict_of(taken)) {
      case token_verdict::publish:
        break;
      case token_verdict::publish_anyway:
        log::warn("publish: rate limit check failed: {}", taken.error().message);
        break;
      case token_verdict::unavailable:
        // The publish would wait out the same deadline again: answer now (503).
        for (const auto& shard : plan.shards)
          for (auto i : shard.slots) out[i] = taken.error();
        co_return answer;
      case token_verdict::limited:
        answer.limited = taken.value().retry_after;
        out.clear();
        co_return answer;
    }
  }
  std::vector<lua::publish_inputs> calls;
  calls.reserve(plan.shards.size());
  for (const auto& shard : plan.shards) {
    lua::publish_settings s;
    s.shard = shard.shard;
    s.dedup_window = opts_.retention.dedup_window;
    s.outbox_retention = opts_.retention.outbox;
    s.sharded = plan.cluster;
    s.count_in_stats = !plan.cluster;
    if (plan.token == token_step::inside) s.rate = *rate;
    calls.push_back(lua::publish_for(keys_, s, shard.items));
  }

  // A NOSCRIPT retry is safe: the script either ran whole or not at all.
  auto results = co_await lua::run_scripts(*conn_, std::move(calls));

  long long fresh = 0;
  for (std::size_t j = 0; j < results.size(); ++j) {
    const auto& slot = plan.shards[j].slots;
    auto& r = results[j];
    if (plan.token == token_step::inside && !r.ec) {
      if (auto wait = lua::publish_refused_for(r.value)) {
        answer.limited = *wait;
        out.clear();
        co_return answer;
      }
    }
    auto parsed = r.ok() ? lua::parse_publish_reply(r.value, slot.size()) : std::nullopt;
    for (std::size_t n = 0; n < slot.size(); ++n) {
      if (!r.ok()) {
        out[slot[n]] = failure_of(r);
      } else if (!parsed) {
        out[slot[n]] = failure{errc::internal, "unexpected reply from publish.lua"};
      } else {
        auto& p = (*parsed)[n];
        if (!p.duplicate) ++fresh;
        out[slot[n]] = published{std::move(p.id), p.duplicate};
      }
    }
  }
  if (plan.cluster && fresh > 0) {
    redis::command stat{"HINCRBY", keys_.plain("stats"), "published", std::to_string(fresh)};
    co_await conn_->exec(std::move(stat));
  }
  co_return answer;
}

}  // namespace pushonce
