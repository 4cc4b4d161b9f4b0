#include "core/lua/publish.hpp"

#include <charconv>

#include "core/errc.hpp"

namespace pushonce::lua {

publish_inputs publish_for(const keys& k, const publish_settings& s,
                           std::span<const publish_item> batch) {
  publish_inputs in{.seq_key = k.bus(s.shard, "seq"),
                    .outbox = k.bus(s.shard, "outbox"),
                    .more_keys = {},
                    .source_arg = std::to_string(s.shard),
                    .window_arg = std::to_string(s.dedup_window.count()),
                    .retention_arg = std::to_string(s.outbox_retention.count()),
                    .channel = s.sharded ? k.bus_channel(s.shard) : k.bus_channel(),
                    .mode = s.sharded ? "s" : "p",
                    .rate_arg = s.rate ? std::to_string(s.rate->rate) : "0",
                    .burst_arg = s.rate ? std::to_string(s.rate->burst) : "0",
                    .count_arg = s.count_in_stats ? "1" : "0",
                    .more_args = {}};
  // Then, in this order: NS:stats, the rate bucket, one idempotency key per message that
  // has one (publish.lua takes them as it goes).
  if (s.count_in_stats) in.more_keys.push_back(k.plain("stats"));
  if (s.rate) in.more_keys.push_back(s.rate->key);
  for (const auto& m : batch)
    if (m.idempotency_key) in.more_keys.push_back(k.idem(s.shard, m.user, *m.idempotency_key));
  in.more_args.reserve(3 * batch.size());
  for (const auto& m : batch) {
    in.more_args.push_back(m.user);
    in.more_args.push_back(m.data_json);
    in.more_args.emplace_back(m.idempotency_key ? "1" : "0");
  }
  return in;
}

std::optional<std::chrono::milliseconds> publish_refused_for(const redis::reply& r) {
  if (!r.is_error() || errc_of_code(r.error_code()) != errc::rate_limited) return std::nullopt;
  auto text = r.error_message();
  long long ms = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc{} || ms < 0) ms = 1000;
  return std::chrono::milliseconds(ms);
}

std::optional<std::vector<publish_outcome>> parse_publish_reply(const redis::reply& r,
                                                                std::size_t messages) {
  if (!r.is_array() || r.elements.size() != 2 * messages) return std::nullopt;
  std::vector<publish_outcome> out(messages);
  for (std::size_t i = 0; i < messages; ++i) {
    const auto& id = r.elements[2 * i];
    out[i].id = id.is_string() ? id.str : std::to_string(id.integer);
    out[i].duplicate = r.elements[2 * i + 1].integer != 0;
  }
  return out;
}

}  // namespace pushonce::lua
