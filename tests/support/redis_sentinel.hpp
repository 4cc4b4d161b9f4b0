#pragma once
// A real Redis Sentinel setup for integration and e2e tests: one master, two replicas
// (--replicaof) and three sentinels (redis-server --sentinel with a generated config:
// monitor the master with quorum 2, down-after 1000 ms, failover-timeout 3000 ms), each on
// a free loopback port in its own temporary directory. Ready when the constructor returns:
// both replicas are in sync and every sentinel knows both replicas and the two other
// sentinels, so that a failover can start as soon as the master is gone. With a password,
// the data servers require it (requirepass, masterauth; the sentinels get auth-pass) while
// the sentinels themselves require none.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.hpp"

namespace pushonce::test {

class redis_server;
class temp_dir;

class redis_sentinel {
 public:
  explicit redis_sentinel(std::string master_name = "mymaster", std::string password = {});
  ~redis_sentinel();
  redis_sentinel(const redis_sentinel&) = delete;
  redis_sentinel& operator=(const redis_sentinel&) = delete;

  const std::string& master_name() const { return master_name_; }
  /// "redis+sentinel://[:PASSWORD@]127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/NAME"
  std::string url() const;
  /// The data servers: 0 is the first master, 1 and 2 its replicas.
  redis_server& server(std::size_t i) { return *servers_.at(i); }
  std::size_t server_count() const { return servers_.size(); }
  /// The server listening on `port` (throws std::out_of_range).
  redis_server& server_on(std::uint16_t port);
  std::vector<std::uint16_t> sentinel_ports() const { return sentinel_ports_; }

  /// The master port that a running sentinel names now (0 when none answers).
  std::uint16_t master_port() const;
  /// Waits until every running sentinel names a master other than `old_port` and that
  /// server answers ROLE as master; its port, or 0 on timeout.
  std::uint16_t wait_new_master(std::uint16_t old_port, std::chrono::milliseconds timeout);

  /// The environment of a program under test: PUSHONCE_REDIS_SENTINEL (and PUSHONCE_REDIS
  /// unset), namespace `ns`, log level info; then `more`, each entry replacing one of these
  /// or added.
  environment program_env(const std::string& ns, const environment& more = {}) const;

  /// Every sentinel's log, for failure messages.
  std::string logs() const;

 private:
  void start_sentinel(std::size_t i, std::uint16_t master);
  bool ready(std::uint16_t master, std::string& why) const;

  std::string master_name_;
  std::string password_;
  std::vector<std::unique_ptr<redis_server>> servers_;
  std::vector<std::unique_ptr<temp_dir>> sentinel_dirs_;
  std::vector<std::unique_ptr<process>> sentinels_;
  std::vector<std::uint16_t> sentinel_ports_;
};

}  // namespace pushonce::test
