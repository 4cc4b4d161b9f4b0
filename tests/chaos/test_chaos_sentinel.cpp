// Redis Sentinel failover under the real programs (docs/operations.md "Redis Sentinel"): a
// master with two replicas and three sentinels (tests/support/redis_sentinel); pushonce-leader
// run, a pushonce-worker and a pushonce-gateway --dev-auth, all with --redis-sentinel (the
// environment variable), and users holding WebSocket sessions that resume with `since`.
// The master is killed with kill -9; the sentinels promote a replica. Then:
//   - publishes through the admin CLI (also --redis-sentinel) succeed again, within a bound
//     that is measured and printed;
//   - every message published after the failover completed reaches its user's session;
//   - no session sees an id twice within one epoch (0 duplicates).
// Messages published before the kill may be lost if the old master had not replicated them
// (asynchronous replication; docs/operations.md "Failover semantics"): not counted.
// CTest: chaos_sentinel_tests (labels chaos, sentinel).

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/redis_sentinel.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_chaos_sentinel {

using namespace pushonce::test;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr int user_count = 4;

long long ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// One user's client: resumes with since on any close, re-syncs on recovered:false (a new
// epoch, offset floor 0), records every message frame with its epoch.
struct user_session {
  std::string user;
  std::uint16_t port = 0;
  std::vector<std::pair<std::string, std::string>> frames;  // epoch, id (after join)
  std::atomic<long long> received{0};                       // read while running
  std::atomic<int> welcomes{0};
  std::mutex mu;
  std::set<std::string> ids;  // every id received, under mu

  bool has(const std::string& id) {
    std::lock_guard lock(mu);
    return ids.count(id) != 0;
  }

  void run(const std::atomic<bool>& stop) {
    std::string epoch;
    long long last = 0;
    while (!stop) {
      ws_client ws;
      try {
        ws.connect("127.0.0.1", port, "/ws", {}, 2s);
      } catch (const std::exception&) {
        pace(100ms, "a reconnect after a refused connect");
        continue;
      }
      std::string hello = epoch.empty() ? hello_frame(user) : hello_frame(user, epoch, last);
      std::optional<std::string> w;
      if (ws.send(hello, 2s)) w = ws.receive(8s);
      auto v = w ? parse_or_null(*w) : boost::json::value();
      if (!v.is_object() || str_field(v.as_object(), "type") != "welcome") {
        pace(100ms, "a reconnect after a hello without a welcome");
        continue;
      }
      const auto& wo = v.as_object();
      auto rec = wo.find("recovered");
      bool recovered = rec != wo.end() && rec->value().is_bool() && rec->value().as_bool();
      auto new_epoch = str_field(wo, "epoch");
      if (!recovered || new_epoch != epoch) last = 0;
      epoch = new_epoch;
      ++welcomes;
      while (!stop) {
        auto f = ws.receive(200ms);
        if (!f) {
          if (ws.closed()) break;
          continue;
        }
        auto fv = parse_or_null(*f);
        if (!fv.is_object() || str_field(fv.as_object(), "type") != "message") continue;
        last = std::max(last, int_field(fv.as_object(), "offset"));
        auto id = str_field(fv.as_object(), "id");
        frames.emplace_back(epoch, id);
        {
          std::lock_guard lock(mu);
          ids.insert(id);
        }
        ++received;
      }
    }
  }
};

}  // namespace

TEST_CASE("sentinel chaos: kill -9 of the master; the programs follow the promoted replica" *
          doctest::test_suite("sentinel")) {
  redis_sentinel rs;
  auto old_master = rs.server(0).port();
  auto ns = unique_namespace("chaos", "sentinel");
  deployment d(
      deployment_options{rs.server(0).url(), old_master, ns, rs.program_env(ns), {}, "info"});
  d.start_leader();
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(20s), d.ready_failure());
  CHECK(d.logs().find("the sentinels name") != std::string::npos);

  std::vector<std::unique_ptr<user_session>> users;
  std::vector<std::thread> threads;
  std::atomic<bool> stop{false};
  for (int i = 0; i < user_count; ++i) {
    auto u = std::make_unique<user_session>();
    u->user = "s" + std::to_string(i);
    u->port = d.port_of(gw);
    users.push_back(std::move(u));
  }
  for (auto& u : users) threads.emplace_back([&u, &stop] { u->run(stop); });
  auto stop_all = [&] {
    stop = true;
    for (auto& t : threads)
      if (t.joinable()) t.join();
  };
  struct joiner {
    std::function<void()> f;
    ~joiner() { f(); }
  } join_on_exit{stop_all};

  REQUIRE(wait_until(
      [&] {
        return std::all_of(users.begin(), users.end(), [](auto& u) { return u->welcomes > 0; });
      },
      10s));

  // Before the failover: the deployment works through the sentinels' master.
  for (int i = 0; i < user_count; ++i) {
    auto id = d.publish(users[i]->user, R"({"phase":"before"})");
    CHECK(wait_until([&] { return users[i]->has(id); }, 10s));
  }

  rs.server(0).kill();
  auto killed = steady::now();
  auto new_master = rs.wait_new_master(old_master, 30s);
  auto promoted = steady::now();
  REQUIRE_MESSAGE(new_master != 0, rs.logs());

  // The first publish that succeeds after the promotion (the CLI gives up on an unreachable
  // Redis within 5 s; it is retried with the same idempotency key).
  std::optional<steady::time_point> first_ok;
  std::vector<std::pair<int, std::string>> after;  // user index, id
  wait_until(
      [&] {
        auto r = d.admin(
            {"publish", users[0]->user, R"({"phase":"after","n":0})", "--id", "after-0", "--json"});
        if (r.code() != 0 || !r.out.is_object()) return false;
        first_ok = steady::now();
        after.emplace_back(0, str_field(r.out.as_object(), "id"));
        return true;
      },
      30s, 100ms);
  REQUIRE_MESSAGE(first_ok, d.digest());
  for (int n = 1; n < 40; ++n) {
    int u = n % user_count;
    auto data = fmt::format(R"({{"phase":"after","n":{}}})", n);
    after.emplace_back(u, d.publish(users[u]->user, data));
  }

  auto all_delivered = [&] {
    return std::all_of(after.begin(), after.end(),
                       [&](const auto& a) { return users[a.first]->has(a.second); });
  };
  bool delivered = wait_until(all_delivered, 20s);
  auto done = steady::now();
  stop_all();

  long long duplicates = 0;
  for (auto& u : users) {
    std::map<std::pair<std::string, std::string>, int> seen;
    for (const auto& f : u->frames) duplicates += seen[f]++ > 0;
  }
  long long missing = 0;
  for (const auto& [u, id] : after) missing += users[u]->ids.count(id) == 0;

  std::printf(
      "sentinel chaos: master %u killed; sentinels promoted %u after %lld ms; first publish "
      "accepted %lld ms after the kill; %zu messages published after the failover, %lld "
      "missing, %lld duplicates; all delivered %lld ms after the kill\n",
      static_cast<unsigned>(old_master), static_cast<unsigned>(new_master),
      ms_between(killed, promoted), ms_between(killed, *first_ok), after.size(), missing,
      duplicates, ms_between(killed, done));
  CHECK_MESSAGE(delivered, d.digest());
  CHECK(missing == 0);
  CHECK(duplicates == 0);
  CHECK(ms_between(killed, *first_ok) < 20000);
  // Every program found the new master through the sentinels.
  auto moved = fmt::format("the sentinels name 127.0.0.1:{}", new_master);
  for (auto* p : d.all(deployment::kind::worker))
    CHECK_MESSAGE(p->stderr_text().find(moved) != std::string::npos, p->stderr_text());
  for (auto* p : d.all(deployment::kind::gateway))
    CHECK_MESSAGE(p->stderr_text().find(moved) != std::string::npos, p->stderr_text());
  for (auto* p : d.all(deployment::kind::leader))
    CHECK_MESSAGE(p->stderr_text().find(moved) != std::string::npos, p->stderr_text());
}

}  // namespace test_chaos_sentinel
