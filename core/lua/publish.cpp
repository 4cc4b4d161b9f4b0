#include "core/lua/publish.hpp"

#include "core/redis/scripts.hpp"

namespace pushonce::lua {

redis::command publish_command(const keys& k, const publish_settings& s,
                               std::span<const publish_item> batch) {
  const auto& script = redis::get_script("publish");
  redis::command cmd{"EVALSHA", script.sha1, ""};
  cmd.reserve(3 + 2 + batch.size() + 5 + 3 * batch.size());
  cmd.push_back(k.bus(s.shard, "seq"));
  cmd.push_back(k.bus(s.shard, "outbox"));
  for (const auto& m : batch)
    if (m.idempotency_key) cmd.push_back(k.idem(s.shard, m.user, *m.idempotency_key));
  cmd[2] = std::to_string(cmd.size() - 3);
  cmd.push_back(std::to_string(s.shard));
  cmd.push_back(std::to_string(s.dedup_window.count()));
  cmd.push_back(std::to_string(s.outbox_retention.count()));
  cmd.push_back(s.sharded ? k.bus_channel(s.shard) : k.bus_channel());
  cmd.emplace_back(s.sharded ? "s" : "p");
  for (const auto& m : batch) {
    cmd.push_back(m.user);
    cmd.push_back(m.data_json);
    cmd.emplace_back(m.idempotency_key ? "1" : "0");
  }
  return cmd;
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
