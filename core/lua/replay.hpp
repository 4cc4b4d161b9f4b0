#pragma once
// The call of lua/replay.lua (KEYS and ARGV order written once, here): `dead-letters replay`
// re-drives a dead-lettered message at most once, decided by its claim record.

#include <chrono>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

struct replay_request {
  std::string id;
  std::string user;                  // from the dead-letter entry (names the record on a cluster)
  std::string outbox;                // the outbox the message came from (its `src`)
  std::string message;               // the bus message line to publish again
  std::vector<std::string> entries;  // the stream ids of every dead-letter entry of `id`
  std::chrono::milliseconds dedup_window{std::chrono::minutes(2)};
};

/// A single Redis (`cluster` false): one call decides on the record, puts the message back
/// into its outbox, publishes it and removes the entries. A cluster: the call decides on and
/// changes the record only; the caller then runs replay_followups.
redis::command replay_command(const keys& k, bool cluster, const replay_request& r);

/// Redis Cluster, after replay_command succeeded: XADD to the outbox, PUBLISH on the bus,
/// XDEL of the entries (each in its own slot).
std::vector<redis::command> replay_followups(const keys& k, const replay_request& r);

}  // namespace pushonce::lua
