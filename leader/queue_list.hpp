#pragma once
// Every leader of a namespace serves the same queues. A leader registers its --queue list
// in NS:queues (a set); a leader whose list lacks a queue another leader registered would
// leave that queue stalled after a failover to it, so it refuses to run (exit status 2)
// instead. This decides which registered queues a list lacks; no I/O.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

namespace pushonce::leader {

/// The queues of `registered` that `mine` lacks, sorted.
inline std::vector<std::string> queues_missing_from(std::vector<std::string> mine,
                                                    std::vector<std::string> registered) {
  std::sort(mine.begin(), mine.end());
  std::sort(registered.begin(), registered.end());
  registered.erase(std::unique(registered.begin(), registered.end()), registered.end());
  std::vector<std::string> missing;
  std::set_difference(registered.begin(), registered.end(), mine.begin(), mine.end(),
                      std::back_inserter(missing));
  return missing;
}

/// The error line of a conflict: the missing queues, this leader's list, the set's key.
inline std::string queue_conflict_message(const std::vector<std::string>& missing,
                                          const std::vector<std::string>& mine,
                                          const std::string& set_key) {
  return fmt::format(
      "queue list conflict: the namespace's queues include {} (registered by another leader), "
      "which this leader's --queue list ({}) lacks: after a failover to it they would stall. Give "
      "every leader the same --queue list (or remove a retired queue with SREM {} NAME)",
      fmt::join(missing, ", "), fmt::join(mine, ","), set_key);
}

}  // namespace pushonce::leader
