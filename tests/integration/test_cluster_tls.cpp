// rediss:// with --redis-cluster: a real 3-master cluster whose nodes listen on TLS ports
// (tls-cluster, tls-replication, client certificates required). The cluster client opens
// every node connection (the seeds, and each master the slot map names) with the same TLS
// files; commands reach every master over TLS; a client with a CA that did not sign the
// servers gets no connection at all.
#include "core/redis/connection.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/integration/cluster_fixture.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/tls_certs.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_tls_integration {

using pushonce::test::cluster_fixture;
using pushonce::test::get_cmd;
using pushonce::test::redis_cluster_options;
using pushonce::test::set_cmd;
using pushonce::test::sync_redis;
using pushonce::test::tls_certs;
namespace redis = pushonce::redis;
using namespace std::chrono_literals;

namespace {

redis::connection_options tls_options(cluster_fixture& fx, const tls_certs& certs,
                                      const std::string& ca) {
  auto o = fx.options();
  o.cluster = redis::endpoint::parse_list(fx.cluster.tls_url());
  for (auto& seed : o.cluster) seed.certs = {ca, certs.client_cert, certs.client_key};
  o.where = o.cluster.front();
  o.client_name = "cluster-tls-test";
  return o;
}

// The local ports (laddr) of the clients named `name` on the node whose plain port is `port`.
std::vector<std::uint16_t> client_ports(std::uint16_t port, const std::string& name) {
  sync_redis r(port);
  auto list = r.text({"CLIENT", "LIST"});
  std::vector<std::uint16_t> out;
  std::size_t start = 0;
  while (start < list.size()) {
    auto end = list.find('\n', start);
    if (end == std::string::npos) end = list.size();
    std::string line = list.substr(start, end - start);
    start = end + 1;
    if (line.find(" name=" + name + " ") == std::string::npos) continue;
    auto l = line.find(" laddr=");
    if (l == std::string::npos) continue;
    auto colon = line.find(':', l);
    out.push_back(static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1))));
  }
  return out;
}

}  // namespace

TEST_CASE("cluster tls: rediss:// seeds; every master reached over TLS with a client cert" *
          doctest::test_suite("cluster")) {
  tls_certs certs;
  cluster_fixture fx(redis_cluster_options{.masters = 3, .replicas = 0, .tls = &certs});
  auto masters = fx.cluster.masters();  // plain ports (the fixture's own view)
  REQUIRE(masters.size() == 3);
  std::vector<std::string> keys;
  for (auto port : masters) keys.push_back(fx.key_on(port, "tls"));

  auto conn = fx.connect(tls_options(fx, certs, certs.ca));
  fx.run([&]() -> boost::asio::awaitable<void> {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      CO_LET(auto set, conn->exec(set_cmd(keys[i], "v" + std::to_string(i))));
      CHECK(set.ok());
    }
    std::vector<redis::command> batch;
    for (auto& k : keys) batch.push_back(get_cmd(k));
    CO_LET(auto all, conn->exec_all(std::move(batch)));
    REQUIRE(all.size() == 3);
    for (std::size_t i = 0; i < keys.size(); ++i)
      CHECK(all[i].value.str == "v" + std::to_string(i));
    CHECK(conn->connected());
  });

  // Each master holds its key, and our client's connection to it came in on its TLS port.
  for (std::size_t n = 0; n < fx.cluster.size(); ++n) {
    auto plain = fx.cluster.node(n).port();
    auto it = std::find(masters.begin(), masters.end(), plain);
    REQUIRE(it != masters.end());
    auto i = static_cast<std::size_t>(it - masters.begin());
    sync_redis r(plain);
    CHECK(r.text({"GET", keys[i]}) == "v" + std::to_string(i));
    auto ports = client_ports(plain, "cluster-tls-test");
    REQUIRE_FALSE(ports.empty());
    for (auto p : ports) CHECK(p == fx.cluster.tls_port(n));
  }
}

TEST_CASE("cluster tls: a CA that did not sign the nodes gets no connection" *
          doctest::test_suite("cluster")) {
  tls_certs certs;
  cluster_fixture fx(redis_cluster_options{.masters = 3, .replicas = 0, .tls = &certs});
  auto o = tls_options(fx, certs, certs.other_ca);
  o.command_timeout = 1500ms;
  auto conn = fx.connect(o);
  fx.run([&]() -> boost::asio::awaitable<void> {
    CO_LET(auto r, conn->exec(set_cmd("k", "v")));
    CHECK_FALSE(r.ok());
  });
  CHECK_FALSE(conn->connected());
  sync_redis r(fx.cluster.node(0).port());
  CHECK(r.integer({"DBSIZE"}) == 0);
}

}  // namespace test_cluster_tls_integration
