#pragma once
// Every leader of a namespace serves the same queues. A leader registers its --queue list
// in NS:queues (a set); a leader whose list lacks a queue another leader registered would
// leave that queue stalled after a failover to it, so it refuses to run (exit status 2)
// instead. This decides which registered queues a list lacks; no I/O.

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

}  // namespace pushonce::leader
