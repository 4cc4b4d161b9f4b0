#pragma once
// A fixture for integration tests of the cluster client: a private Redis Cluster (3 masters,
// 1 replica each: tests/support/redis_cluster), one io_context driven by run(), and a
// started redis::connection in cluster mode (the seeds are every node).

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "tests/integration/run_async.hpp"
#include "tests/support/redis_cluster.hpp"

namespace pushonce::test {

// Commands as values: GCC 12 cannot take a braced list inside a co_await operand.
inline redis::command set_cmd(const std::string& k, const std::string& v) {
  return {"SET", k, v};
}
inline redis::command get_cmd(const std::string& k) {
  return {"GET", k};
}

class cluster_fixture {
 public:
  explicit cluster_fixture(redis_cluster_options o = {}) : cluster(o), k("t", 16) {
    conn = connect();
  }
  ~cluster_fixture() {
    for (auto& c : conns_) c->stop();
    io.restart();
    io.run_for(std::chrono::seconds(2));
  }
  cluster_fixture(const cluster_fixture&) = delete;
  cluster_fixture& operator=(const cluster_fixture&) = delete;

  redis::connection_options options() const {
    redis::connection_options o;
    o.cluster = redis::endpoint::parse_list(cluster.url());
    o.where = o.cluster.front();
    o.command_timeout = std::chrono::milliseconds(5000);
    o.backoff_initial = std::chrono::milliseconds(20);
    o.backoff_max = std::chrono::milliseconds(200);
    return o;
  }

  std::shared_ptr<redis::connection> connect(redis::connection_options o) {
    auto c = redis::connection::create(io.get_executor(), std::move(o));
    c->start();
    conns_.push_back(c);
    return c;
  }
  std::shared_ptr<redis::connection> connect() { return connect(options()); }

  template <typename F>
  auto run(F f, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    return run_async(io, std::move(f), limit);
  }

  /// A key (with a hash tag) that hashes to a slot served by the master on `port`.
  std::string key_on(std::uint16_t port, const std::string& prefix) {
    for (int i = 0;; ++i) {
      std::string key = prefix + ":{" + std::to_string(i) + "}";
      if (cluster.master_of(cluster.slot_of(key)) == port) return key;
    }
  }

  redis_cluster cluster;
  boost::asio::io_context io;
  keys k;
  std::shared_ptr<redis::connection> conn;

 private:
  std::vector<std::shared_ptr<redis::connection>> conns_;
};

}  // namespace pushonce::test
