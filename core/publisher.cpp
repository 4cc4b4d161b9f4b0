#include "core/publisher.hpp"

#include "core/names.hpp"
#include "core/redis/scripts.hpp"
#include "core/trace.hpp"

namespace pushonce {

namespace asio = boost::asio;

publisher::publisher(std::shared_ptr<redis::connection> conn, keys k, publisher_options opts)
    : conn_(std::move(conn)), keys_(std::move(k)), opts_(opts) {
  if (opts_.shards == 0 || opts_.shards > 16) opts_.shards = 1;
}

std::optional<failure> publisher::validate(const publish_request& r) {
  if (!valid_name(r.user))
    return failure{"bad_request",
                   "invalid user '" + r.user + "': use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
  if (r.idempotency_key && (r.idempotency_key->empty() || r.idempotency_key->size() > 200))
    return failure{"bad_request", "an idempotency key is a string of 1-200 characters"};
  if (r.data_json.empty()) return failure{"bad_request", "data is missing"};
  return std::nullopt;
}

redis::command publisher::command_for(const publish_request& r) const {
  unsigned shard = keys::shard_of(r.user, opts_.shards);
  auto seq = keys_.bus(shard, "seq");
  std::vector<std::string> k{
      seq, keys_.bus(shard, "outbox"),
      r.idempotency_key ? keys_.idem(shard, r.user, *r.idempotency_key) : seq};
  std::vector<std::string> a{r.user,
                             r.data_json,
                             std::to_string(shard),
                             r.idempotency_key ? "1" : "0",
                             std::to_string(opts_.dedup_window.count()),
                             std::to_string(opts_.outbox_maxlen),
                             keys_.bus_channel()};
  return redis::evalsha_command(redis::get_script("publish"), k, a);
}

asio::awaitable<outcome<published>> publisher::publish(publish_request r) {
  std::vector<publish_request> one;
  one.push_back(std::move(r));
  auto results = co_await publish_batch(std::move(one));
  co_return std::move(results.front());
}

asio::awaitable<std::vector<outcome<published>>> publisher::publish_batch(
    std::vector<publish_request> batch) {
  std::vector<outcome<published>> out;
  out.reserve(batch.size());
  for (auto& r : batch) {
    if (auto f = validate(r)) {
      out.emplace_back(*f);
      continue;
    }
    out.emplace_back(published{});
  }
  std::vector<redis::command> cmds;
  std::vector<std::size_t> slot;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!out[i].ok()) continue;
    cmds.push_back(command_for(batch[i]));
    slot.push_back(i);
  }
  if (cmds.empty()) co_return out;

  // Scripts of one shard run in order, so a key repeated in the batch is a duplicate of
  // its first use; a NOSCRIPT retry is safe because of the idempotency keys.
  const auto& script = redis::get_script("publish");
  auto results = co_await redis::eval_all(*conn_, script, std::move(cmds));

  long long fresh = 0;
  for (std::size_t j = 0; j < results.size(); ++j) {
    auto& r = results[j];
    if (!r.ok()) {
      out[slot[j]] = failure_of(r);
      continue;
    }
    published p;
    const auto& idv = r.value.at(0);
    p.id = idv.is_string() ? idv.str : std::to_string(idv.integer);
    p.duplicate = r.value.at(1).integer != 0;
    if (!p.duplicate) {
      ++fresh;
      tracer(conn_, keys_, opts_.dedup_window)
          .record(p.id,
                  {{"event", "published"}, {"user", batch[slot[j]].user}, {"kind", "message"}});
    }
    out[slot[j]] = std::move(p);
  }
  if (fresh > 0) {
    redis::command stat{"HINCRBY", keys_.plain("stats"), "published", std::to_string(fresh)};
    co_await conn_->exec(std::move(stat));
  }
  co_return out;
}

}  // namespace pushonce
