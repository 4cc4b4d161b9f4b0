#pragma once
// Where a command goes in a Redis Cluster, from its words alone (no socket):
//  - the keys it names (EVAL/EVALSHA/FCALL: its KEYS; XREAD/XREADGROUP: after STREAMS;
//    XINFO/OBJECT/MEMORY: the word after the subcommand; DEL/EXISTS/MGET/UNLINK/TOUCH:
//    every argument; most others: the first argument);
//  - its route: the slot of its first key; any master for a command without keys (PING,
//    TIME, INFO, PUBLISH, an EVAL with no KEYS); every master for SCRIPT and FUNCTION
//    (so that SCRIPT LOAD after a NOSCRIPT reaches the node that answered it).
// A command whose keys hash to different slots cannot run on a cluster: `spans_slots` says
// so (the cluster client asserts it in debug builds).

#include <optional>
#include <string_view>
#include <vector>

#include "core/redis/reply.hpp"

namespace pushonce::redis {

struct command_route {
  enum class kind { slot, any, all };
  kind where = kind::any;
  unsigned slot = 0;  // when where == slot
};

/// The keys of a command, in order (views into `cmd`).
std::vector<std::string_view> command_keys(const command& cmd);
/// Where the command goes.
command_route route_of(const command& cmd);
/// True when two of the command's keys hash to different slots.
bool spans_slots(const command& cmd);

}  // namespace pushonce::redis
