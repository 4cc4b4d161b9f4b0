#pragma once
// Where each sharded Pub/Sub channel is subscribed on a Redis Cluster, with no socket (the
// decisions of redis::sharded_subscriber): a channel belongs to the master that serves its
// slot (hash_slot of the channel name, its hash tag like a key's); when the slot map changes,
// the channels whose owner changed move; when a node gives a channel up (its slot migrated)
// or its connection is lost, the channel waits unplaced until the next map says where.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/redis/slot_map.hpp"

namespace pushonce::redis {

class channel_routes {
 public:
  /// A channel to move: unsubscribe it on `from` (when not empty), subscribe it on `to`
  /// (node_address::key() of its owner in the new map; empty: no master serves its slot).
  struct move {
    std::string channel;
    std::string from;
    std::string to;
    bool operator==(const move&) const = default;
  };

  /// The key of the master serving `channel`'s slot in `m`; empty when none does.
  static std::string owner(const slot_map& m, std::string_view channel);

  /// Wants `ch` (unplaced when new); true when it was not wanted before.
  bool want(const std::string& ch);
  /// Stops wanting `ch`; the node it was placed on (empty: none).
  std::string drop(const std::string& ch);
  bool wants(const std::string& ch) const { return where_.count(ch) != 0; }
  /// The node `ch` is placed on; empty when unplaced or not wanted.
  std::string placed(const std::string& ch) const;
  /// `ch` is subscribed on `node` from now on (ignored when not wanted).
  void place(const std::string& ch, const std::string& node);
  /// `node` gave `ch` up (sunsubscribe / MOVED): unplaced, if it was placed there. True when
  /// it was.
  bool unplace(const std::string& ch, const std::string& node);

  /// Every wanted channel whose owner in `m` is not where it is placed (unplaced channels
  /// included), in channel order. Nothing is changed: the caller places what it subscribed.
  std::vector<move> plan(const slot_map& m) const;
  /// The channels placed on `node`.
  std::vector<std::string> on(const std::string& node) const;
  /// Wanted channels placed nowhere.
  std::size_t unplaced() const;
  std::size_t size() const { return where_.size(); }

 private:
  std::map<std::string, std::string> where_;  // channel -> node key, empty: unplaced
};

}  // namespace pushonce::redis
