#pragma once
// Every Redis key and channel name of docs/data-model.md, built from the namespace and the
// number of bus shards.

#include <string>
#include <string_view>
#include <vector>

namespace pushonce {

class keys {
 public:
  /// `shards`: --bus-shards (1-16). Every process of one deployment must use the same
  /// value: it decides where each user's keys are (check_layout in core/layout_check.hpp).
  explicit keys(std::string ns, unsigned shards = 1);
  const std::string& ns() const { return ns_; }
  unsigned shards() const { return static_cast<unsigned>(tags_.size()); }

  // {q:Q}: queue state and its outbox. suffix e.g. "waiting", "res:meta", "outbox".
  std::string queue(std::string_view q, std::string_view suffix) const;

  // Bus shard N: its id sequence, idempotency keys and outbox, and every key of the users
  // that hash to it (shard_of), so that one script call settles a shard's batch on a
  // Redis Cluster as on a single Redis. suffix e.g. "seq", "outbox".
  std::string bus(unsigned shard, std::string_view suffix) const;
  /// The hash tag of shard N (without braces): "bus:N", or "bus:N:K" with the smallest
  /// K >= 1 that puts the tag's slot in the N-th of `shards` equal slot ranges, so that
  /// shards spread evenly over masters that own equal ranges.
  const std::string& bus_tag(unsigned shard) const { return tags_.at(shard); }
  std::string idem(unsigned shard, std::string_view user, std::string_view key) const;
  static unsigned shard_of(std::string_view user, unsigned shards);  // crc32(user) % shards
  unsigned shard_of(std::string_view user) const { return shard_of(user, shards()); }
  // NS:{bus:N}:ch: shard N's own bus channel on Redis Cluster (SPUBLISH, in the shard's slot).
  std::string bus_channel(unsigned shard) const { return bus(shard, "ch"); }

  // A user's keys, in its shard: NS:{bus:N}:u:U:suffix (suffix "meta", "inbox").
  std::string user(std::string_view u, std::string_view suffix) const;
  std::string user_channel(std::string_view u) const;  // NS:{bus:N}:u:U:ch
  // NS:{bus:N}:u:U:c:ID: names message ID to U for claim.lua, which finds the user's keys
  // and the record bucket (claim_bucket) from it; no key of that name is written.
  std::string claim(std::string_view u, std::string_view id) const;
  // NS:{bus:N}:c:<source>:<ID div 524288>, N the user's shard: the hash of claim records
  // (fields: ids) that holds ID's: the ids of one source whose sequences share seq div 128
  // (ID = seq × 4096 + source). An id that is not decimal digits names bucket 0:0.
  std::string claim_bucket(std::string_view u, std::string_view id) const;
  // The same bucket of bus shard `shard` (a lookup that does not know the user).
  std::string claim_bucket_in(unsigned shard, std::string_view id) const;

  // NS:b:ID: the race for the bus payload whose first message is ID (claim_batch.lua).
  std::string batch(std::string_view first_id) const;
  // Untagged keys and channels.
  std::string plain(std::string_view suffix) const;         // NS:suffix ("stats", "sources", ...)
  std::string bus_channel() const { return plain("bus"); }  // every shard, a single Redis
  // The leader's fencing counter: NS:leader:fencing; on Redis Cluster
  // NS:{NS:leader}:fencing, in NS:leader's slot (leader_lease.lua touches both).
  std::string leader_fencing(bool cluster) const {
    return cluster ? ns_ + ":{" + plain("leader") + "}:fencing" : plain("leader:fencing");
  }
  std::string wake_channel() const { return plain("leader:wake"); }

 private:
  std::string ns_;
  std::vector<std::string> tags_;  // tags_[N]: bus_tag(N)
};

}  // namespace pushonce
