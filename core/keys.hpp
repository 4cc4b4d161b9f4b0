#pragma once
// Every Redis key and channel name of docs/data-model.md, built from the namespace.

#include <string>
#include <string_view>

namespace pushonce {

class keys {
 public:
  explicit keys(std::string ns) : ns_(std::move(ns)) {}
  const std::string& ns() const { return ns_; }

  // {q:Q}: queue state and its outbox. suffix e.g. "waiting", "res:meta", "outbox".
  std::string queue(std::string_view q, std::string_view suffix) const;
  // {u:U}: per-user claims, meta, inbox, channel.
  std::string user(std::string_view u, std::string_view suffix) const;
  std::string claim(std::string_view u, std::string_view id) const;  // NS:{u:U}:c:ID
  // NS:c:<source>:<ID div 524288>: the hash of claim records (fields: ids) that holds ID's
  // on a single Redis: the ids of one source whose sequences share seq div 128 (ID = seq ×
  // 4096 + source). An id that is not decimal digits names bucket 0:0.
  std::string claim_bucket(std::string_view id) const;
  std::string claim_bucket_prefix() const { return plain("c:"); }  // NS:c:
  // NS:b:ID: the race for the bus payload whose first message is ID (claim_batch.lua).
  std::string batch(std::string_view first_id) const;
  std::string user_channel(std::string_view u) const;  // NS:{u:U}:ch
  // {bus:N}: custom-publish shard.
  std::string bus(unsigned shard, std::string_view suffix) const;
  std::string idem(unsigned shard, std::string_view user, std::string_view key) const;
  static unsigned shard_of(std::string_view user, unsigned shards);  // crc32(user) % shards
  // NS:{bus:N}:ch: shard N's own bus channel on Redis Cluster (SPUBLISH, in the shard's slot).
  std::string bus_channel(unsigned shard) const { return bus(shard, "ch"); }
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
};

}  // namespace pushonce
