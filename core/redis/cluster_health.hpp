#pragma once
// Which slots of a Redis Cluster have no master, from CLUSTER NODES (no I/O, unit-tested):
// the slots of a master flagged `fail` (its replicas have not taken over yet, or it has
// none), and the slots no node claims. While a slot has no master, every command on its
// keys is refused (CLUSTERDOWN); /readyz and `status` name them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce::redis {

struct slot_range {
  unsigned first = 0, last = 0;  // inclusive
  bool operator==(const slot_range&) const = default;
};

/// The slot ranges without a master, merged and in order; std::nullopt when `nodes` is not
/// CLUSTER NODES text.
std::optional<std::vector<slot_range>> slots_without_master(std::string_view nodes);

/// "0-5460,10923" (a single slot without a dash); "" for none.
std::string to_string(const std::vector<slot_range>& ranges);

}  // namespace pushonce::redis
