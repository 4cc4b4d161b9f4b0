#pragma once
// A fixture for integration tests of the cluster client: a private Redis Cluster (3 masters,
// 1 replica each: tests/support/redis_cluster) and a started redis::connection in cluster
// mode, the seeds being every node (async_fixture: the io_context, run(), more connections).

#include <memory>
#include <string>
#include <vector>

#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "tests/integration/async_fixture.hpp"
#include "tests/support/redis_cluster.hpp"

namespace pushonce::test {

// Commands as values (GCC 12: docs/architecture.md "Coroutines and GCC 12").
inline redis::command set_cmd(const std::string& k, const std::string& v) {
  return {"SET", k, v};
}
inline redis::command get_cmd(const std::string& k) {
  return {"GET", k};
}

class cluster_fixture : public async_fixture {
 public:
  // The keys of a cluster deployment: 16 bus shards, the programs' default there.
  explicit cluster_fixture(redis_cluster_options o = {}) : cluster(o) {
    k = keys("t", 16);
    conn = connect();
  }
  ~cluster_fixture() { stop_all(); }

  redis::connection_options options() const {
    auto o = quick_options();
    o.cluster = redis::endpoint::parse_list(cluster.url());
    o.where = o.cluster.front();
    return o;
  }

  using async_fixture::connect;
  std::shared_ptr<redis::connection> connect() { return connect(options()); }

  /// A key (with a hash tag) that hashes to a slot served by the master on `port`.
  std::string key_on(std::uint16_t port, const std::string& prefix) {
    for (int i = 0;; ++i) {
      std::string key = prefix + ":{" + std::to_string(i) + "}";
      if (cluster.master_of(cluster.slot_of(key)) == port) return key;
    }
  }

  redis_cluster cluster;
};

}  // namespace pushonce::test
