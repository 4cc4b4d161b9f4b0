#pragma once
// A real Redis Cluster for integration and e2e tests: 3 masters and 1 replica each by
// default, every node a redis_server (free loopback port, private directory, stopped with
// the cluster), joined by `redis-cli --cluster create --cluster-replicas R --cluster-yes`.
// Ready (cluster_state:ok on every node, every replica in sync) when the constructor
// returns. Helpers move one slot to another master (the steps of `redis-cli --cluster
// reshard`) and kill a master so that its replica is promoted.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

namespace pushonce::test {

class tls_certs;

struct redis_cluster_options {
  int masters = 3;
  int replicas = 1;                              // per master
  std::chrono::milliseconds node_timeout{1000};  // cluster-node-timeout: failover detection
  std::chrono::milliseconds ready_timeout{30000};
  // When set, every node also listens on a TLS port with these files, and the cluster bus
  // and replication use TLS (tls-cluster, tls-replication). The plain ports stay for the
  // fixture's own checks; a TLS client is told the TLS ports by CLUSTER SLOTS.
  const tls_certs* tls = nullptr;
  bool tls_auth_clients = true;  // clients (and nodes) must show a certificate of the CA
};

class redis_cluster {
 public:
  explicit redis_cluster(redis_cluster_options options = {});
  ~redis_cluster();
  redis_cluster(const redis_cluster&) = delete;
  redis_cluster& operator=(const redis_cluster&) = delete;

  std::size_t size() const { return nodes_.size(); }
  redis_server& node(std::size_t i) { return *nodes_.at(i); }
  /// The node listening on `port` (throws std::out_of_range).
  redis_server& node_on(std::uint16_t port);
  /// "redis://127.0.0.1:P1,127.0.0.1:P2,..." (every node: the seed list).
  std::string url() const;
  /// With options.tls: "rediss://127.0.0.1:T1,..." (every node's TLS port).
  std::string tls_url() const;
  /// With options.tls: the TLS port of node i.
  std::uint16_t tls_port(std::size_t i) const { return tls_ports_.at(i); }

  /// The hash slot of a key, as the cluster computes it (CLUSTER KEYSLOT).
  unsigned slot_of(const std::string& key);
  /// The port of the master that serves `slot` now (asked of a running node).
  std::uint16_t master_of(unsigned slot);
  /// The ports of the running masters that serve slots.
  std::vector<std::uint16_t> masters();

  /// Moves `slot` with its keys to the master on port `to` (SETSLOT IMPORTING/MIGRATING,
  /// MIGRATE in batches, SETSLOT NODE on every master).
  void move_slot(unsigned slot, std::uint16_t to);
  /// `redis-cli --cluster reshard` of `count` slots from the master on port `from` to the
  /// one on port `to` (redis-cli moves the lowest-numbered slots `from` serves); waits until
  /// the cluster is ok. Throws with redis-cli's output when it fails.
  void reshard_with_cli(std::uint16_t from, std::uint16_t to, unsigned count);
  /// The slots the master on port `port` serves, lowest first.
  std::vector<unsigned> slots_of(std::uint16_t port);
  /// Only the first half of a move: `slot` is MIGRATING on its owner and IMPORTING on
  /// `to`, and the keys named are migrated already (the window in which owners answer ASK).
  void begin_move(unsigned slot, std::uint16_t to, const std::vector<std::string>& keys);

  /// The environment of a program under test on this cluster: PUSHONCE_REDIS_CLUSTER (and
  /// PUSHONCE_REDIS unset), namespace `ns`, log level info; then `more`, each entry
  /// replacing one of these or added.
  environment program_env(const std::string& ns, const environment& more = {}) const;

  /// Waits until a replica of the master of `key`'s slot holds every write made there so
  /// far (replication is asynchronous; kill -9 a master before this and its replica may
  /// miss them). WAIT counts from the calling client's last write, so this writes a marker
  /// key in the same slot first. Returns WAIT's count of replicas (0 on timeout).
  long long wait_replicated(const std::string& key,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5));

  /// kill -9 of the master serving `slot`; waits until a replica was promoted and the
  /// cluster is ok again; the new master's port.
  std::uint16_t fail_master_of(unsigned slot);

  /// cluster_state:ok on every running node and every node agrees who serves each slot.
  bool wait_ok(std::chrono::milliseconds timeout);

 private:
  std::uint16_t any_running_port();
  std::string node_id(std::uint16_t port);

  redis_cluster_options options_;
  std::vector<std::unique_ptr<redis_server>> nodes_;
  std::vector<std::uint16_t> tls_ports_;  // parallel to nodes_, with options.tls
};

}  // namespace pushonce::test
