#include "core/publisher.hpp"

#include "core/log.hpp"
#include "core/lua/publish.hpp"
#include "core/lua/rate_limit.hpp"
#include "core/redis/failure_of.hpp"
#include "core/redis/scripts.hpp"

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
  publish_answer answer;
  auto& out = answer.results;
  out.reserve(batch.size());
  // The valid requests of each shard, in order, and where their results go.
  std::vector<std::vector<publish_request>> items(keys_.shards());
  std::vector<std::vector<std::size_t>> slots(keys_.shards());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& r = batch[i];
    if (auto f = validate_publish(r)) {
      out.emplace_back(*f);
      continue;
    }
    out.emplace_back(published{});
    auto shard = keys::shard_of(r.user, keys_.shards());
    items[shard].push_back(std::move(r));
    slots[shard].push_back(i);
  }
  std::vector<unsigned> shard_of_cmd;
  for (unsigned shard = 0; shard < keys_.shards(); ++shard)
    if (!items[shard].empty()) shard_of_cmd.push_back(shard);
  if (shard_of_cmd.empty()) co_return answer;

  // NS:stats and the bucket are in other slots of a cluster; pipelined calls of several
  // shards would publish before the first one's token is known.
  const bool single = !conn_->is_cluster();
  const bool token_inside = rate && single && shard_of_cmd.size() == 1;
  if (rate && !token_inside) {
    auto d = co_await lua::take_tokens(*conn_, rate->key, rate->rate, rate->burst);
    if (!d && d.error().code == errc::redis_unavailable) {
      // The publish would wait out the same deadline again: answer now (503).
      for (const auto& shard : slots)
        for (auto i : shard) out[i] = d.error();
      co_return answer;
    }
    if (!d) {
      log::warn("publish: rate limit check failed: {}", d.error().message);
    } else if (!d.value().allowed) {
      answer.limited = d.value().retry_after;
      answer.results.clear();
      co_return answer;
    }
  }
  std::vector<redis::command> cmds;
  for (auto shard : shard_of_cmd) {
    lua::publish_settings s;
    s.shard = shard;
    s.dedup_window = opts_.retention.dedup_window;
    s.outbox_retention = opts_.retention.outbox;
    s.sharded = !single;
    s.count_in_stats = single;
    if (token_inside) s.rate = *rate;
    cmds.push_back(lua::publish_command(keys_, s, items[shard]));
  }

  // A NOSCRIPT retry is safe: the script either ran whole or not at all.
  const auto& script = redis::get_script("publish");
  auto results = co_await redis::eval_all(*conn_, script, std::move(cmds));

  long long fresh = 0;
  for (std::size_t j = 0; j < results.size(); ++j) {
    const auto& slot = slots[shard_of_cmd[j]];
    auto& r = results[j];
    if (token_inside && !r.ec) {
      if (auto wait = lua::publish_refused_for(r.value)) {
        answer.limited = *wait;
        answer.results.clear();
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
  if (!single && fresh > 0) {
    redis::command stat{"HINCRBY", keys_.plain("stats"), "published", std::to_string(fresh)};
    co_await conn_->exec(std::move(stat));
  }
  co_return answer;
}

}  // namespace pushonce
