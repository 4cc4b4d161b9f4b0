#pragma once
// Which master serves each of the 16384 slots of a Redis Cluster, read from a CLUSTER SLOTS
// reply (Redis 3 to 7; CLUSTER SHARDS says the same with more words), and updated one slot at
// a time by MOVED redirections until the next full read. No sockets.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/redis/reply.hpp"

namespace pushonce::redis {

struct node_address {
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const node_address&) const = default;
  /// host:port (an IPv6 host in brackets).
  std::string key() const;
};

/// A MOVED or ASK error reply: "MOVED 3999 127.0.0.1:6381".
struct redirect {
  bool ask = false;  // ASK: this command only, after ASKING; MOVED: the slot moved for good
  unsigned slot = 0;
  node_address to;
};

/// The redirection an error reply carries, if it is one.
std::optional<redirect> parse_redirect(const reply& r);

class slot_map {
 public:
  /// Reads a CLUSTER SLOTS reply; `asked` is the node that answered (a range whose master
  /// has an empty or "?" address is served by it). Empty when the reply is malformed.
  static std::optional<slot_map> parse(const reply& cluster_slots, const node_address& asked);

  /// The master serving `slot`, or nullptr when no master serves it.
  const node_address* owner(unsigned slot) const;
  /// The index in masters() of the master serving `slot`, or -1.
  int owner_index(unsigned slot) const {
    return slot < owner_.size() && owner_[slot] != none ? owner_[slot] : -1;
  }
  /// Every master that serves at least one slot, in the order first seen.
  const std::vector<node_address>& masters() const { return masters_; }
  /// Slots with no master.
  std::size_t unserved() const;
  /// A MOVED: `slot` is served by `to` from now on (a master added when new).
  void assign(unsigned slot, const node_address& to);

  bool operator==(const slot_map&) const = default;

 private:
  std::size_t index_of(const node_address& a);
  static constexpr std::uint16_t none = 0xffff;
  std::vector<node_address> masters_;
  std::vector<std::uint16_t> owner_;  // slot -> index in masters_, or none
};

}  // namespace pushonce::redis
