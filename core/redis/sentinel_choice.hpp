#pragma once
// What the sentinels' answers mean, with no sockets: the order in which to ask them, the
// master that SENTINEL get-master-addr-by-name names (with the URL's credentials and TLS),
// and whether ROLE says "master". redis::sentinel_lookup carries out the I/O.
//
// Invariants: the sentinel that answered last is asked first in the next round, the others
// follow in the order of the URL; a master is only ever taken from a well-formed answer.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/redis/endpoint.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::redis {

class sentinel_choice {
 public:
  explicit sentinel_choice(sentinel_config cfg);

  /// The indexes of the sentinels to ask this round, in order.
  std::vector<std::size_t> order() const;
  const endpoint& sentinel(std::size_t i) const { return cfg_.sentinels[i]; }
  std::size_t size() const { return cfg_.sentinels.size(); }

  /// SENTINEL get-master-addr-by-name NAME.
  command query() const;
  /// Sentinel `i`'s answer to query(): the master (with the URL's credentials, TLS and
  /// certificates), and `i` is asked first next time; or std::nullopt with `why` filled
  /// (an error reply, nil: the name is unknown, or a malformed answer).
  std::optional<endpoint> on_answer(std::size_t i, const reply& r, std::string& why);

  /// ROLE's answer names a master.
  static bool is_master(const reply& role);

 private:
  sentinel_config cfg_;
  std::size_t preferred_ = 0;
};

}  // namespace pushonce::redis
