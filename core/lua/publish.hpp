#pragma once
// The call of lua/publish.lua (KEYS and ARGV order written once, here) and its reply: a
// batch of custom messages to users of one bus shard, published as one bus payload.

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/publish.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct publish_inputs {
  static constexpr std::string_view script = "publish";
  std::string seq_key{}, outbox{};       // KEYS
  std::vector<std::string> more_keys{};  // KEYS after the named ones
  std::string source_arg{}, window_arg{}, retention_arg{}, channel{}, mode{}, rate_arg{},
      burst_arg{}, count_arg{};          // ARGV
  std::vector<std::string> more_args{};  // ARGV after the named ones
  static constexpr auto key_fields() {
    return std::array<script_input<publish_inputs>, 2>{
        {{"seq_key", &publish_inputs::seq_key}, {"outbox", &publish_inputs::outbox}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<publish_inputs>, 8>{
        {{"source_arg", &publish_inputs::source_arg},
         {"window_arg", &publish_inputs::window_arg},
         {"retention_arg", &publish_inputs::retention_arg},
         {"channel", &publish_inputs::channel},
         {"mode", &publish_inputs::mode},
         {"rate_arg", &publish_inputs::rate_arg},
         {"burst_arg", &publish_inputs::burst_arg},
         {"count_arg", &publish_inputs::count_arg}}};
  }
};

struct publish_item {
  std::string user;
  std::string data_json;  // any JSON value, validated and serialised
  std::optional<std::string> idempotency_key;
};

/// The request's token bucket (lua/rate_limit.lua's, taken by publish.lua itself).
struct publish_rate {
  std::string key;  // lua::rate_limit_key
  long long rate = 0;
  long long burst = 0;
};

struct publish_settings {
  unsigned shard = 0;
  std::chrono::milliseconds dedup_window{std::chrono::minutes(2)};
  std::chrono::milliseconds outbox_retention{std::chrono::minutes(2)};
  // Redis Cluster: SPUBLISH the batch on the shard's own channel NS:{bus:N}:ch (sharded
  // Pub/Sub, served by the master of the shard's slot); else PUBLISH on NS:bus.
  bool sharded = false;
  // On a single Redis only (NS:stats and the bucket are in other slots of a cluster): add
  // the published count to NS:stats, and take the request's token first (error
  // rate_limited <ms> and nothing published when there is none).
  bool count_in_stats = false;
  std::optional<publish_rate> rate = std::nullopt;
};

struct publish_outcome {
  std::string id;
  bool duplicate = false;
};

/// Every item must be of `s.shard` (keys::shard_of).
publish_inputs publish_for(const keys& k, const publish_settings& s,
                           std::span<const publish_item> batch);

/// The wait in a rate_limited error reply of publish.lua; std::nullopt for any other reply.
std::optional<std::chrono::milliseconds> publish_refused_for(const redis::reply& r);

/// One outcome per message, in order; std::nullopt when the reply is not publish.lua's.
std::optional<std::vector<publish_outcome>> parse_publish_reply(const redis::reply& r,
                                                                std::size_t messages);

}  // namespace pushonce::lua
