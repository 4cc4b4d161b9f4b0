#pragma once
// The call of lua/replay.lua (KEYS and ARGV order written once, here): `dead-letters replay`
// re-drives a dead-lettered message at most once, decided by its claim record.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/claim.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/replay.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct replay_inputs {
  static constexpr std::string_view script = "replay";
  std::string bucket{}, stream{}, outbox{};               // KEYS
  std::string field_arg{}, window_arg{}, channel{}, m{};  // ARGV
  std::vector<std::string> more_args{};                   // ARGV after the named ones
  static constexpr auto key_fields() {
    return std::array<script_input<replay_inputs>, 3>{{{"bucket", &replay_inputs::bucket},
                                                       {"stream", &replay_inputs::stream},
                                                       {"outbox", &replay_inputs::outbox}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<replay_inputs>, 4>{{{"field_arg", &replay_inputs::field_arg},
                                                       {"window_arg", &replay_inputs::window_arg},
                                                       {"channel", &replay_inputs::channel},
                                                       {"m", &replay_inputs::m}}};
  }
};

struct replay_request {
  std::string id;
  std::string user;                  // from the dead-letter entry (names the record on a cluster)
  std::string outbox;                // the outbox the message came from (its `src`)
  std::string message;               // the bus message line to publish again
  std::vector<std::string> entries;  // the stream ids of every dead-letter entry of `id`
  std::chrono::milliseconds dedup_window{std::chrono::minutes(2)};
  // Where the record is when no entry names the user and the message (found by the caller
  // in the id's buckets); otherwise it is named from them.
  std::optional<record_ref> record{};
};

/// A single Redis (`cluster` false): one call decides on the record, puts the message back
/// into its outbox, publishes it and removes the entries. A cluster: the call decides on and
/// changes the record only; the caller then runs replay_followups.
replay_inputs replay_for(const keys& k, bool cluster, const replay_request& r);

/// Redis Cluster, after replay_for succeeded: XADD to the outbox, PUBLISH on the bus,
/// XDEL of the entries (each in its own slot).
std::vector<redis::command> replay_followups(const keys& k, const replay_request& r);

}  // namespace pushonce::lua
