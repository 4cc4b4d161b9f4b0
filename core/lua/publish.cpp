#include "core/lua/publish.hpp"

#include <charconv>

#include "core/errc.hpp"
#include "core/redis/scripts.hpp"

namespace pushonce::lua {

redis::command publish_command(const keys& k, const publish_settings& s,
                               std::span<const publish_item> batch) {
  const auto& script = redis::get_script("publish");
  redis::command cmd{"EVALSHA", script.sha1, ""};
  cmd.reserve(3 + 4 + batch.size() + 8 + 3 * batch.size());
  cmd.push_back(k.bus(s.shard, "seq"));
  cmd.push_back(k.bus(s.shard, "outbox"));
  if (s.count_in_stats) cmd.push_back(k.plain("stats"));
  if (s.rate) cmd.push_back(s.rate->key);
  for (const auto& m : batch)
    if (m.idempotency_key) cmd.push_back(k.idem(s.shard, m.user, *m.idempotency_key));
  cmd[2] = std::to_string(cmd.size() - 3);
  cmd.push_back(std::to_string(s.shard));
  cmd.push_back(std::to_string(s.dedup_window.count()));
  cmd.push_back(std::to_string(s.outbox_retention.count()));
  cmd.push_back(s.sharded ? k.bus_channel(s.shard) : k.bus_channel());
  cmd.emplace_back(s.sharded ? "s" : "p");
  cmd.push_back(s.rate ? std::to_string(s.rate->rate) : "0");
  cmd.push_back(s.rate ? std::to_string(s.rate->burst) : "0");
  cmd.emplace_back(s.count_in_stats ? "1" : "0");
  for (const auto& m : batch) {
    cmd.push_back(m.user);
    cmd.push_back(m.data_json);
    cmd.emplace_back(m.idempotency_key ? "1" : "0");
  }
  return cmd;
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
