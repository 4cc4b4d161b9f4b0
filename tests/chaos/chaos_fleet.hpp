#pragma once
// The processes of the chaos run in slots: a restarted process takes its slot (the killed
// one stays in the deployment for its logs).

#include <fmt/format.h>

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/chaos/chaos_common.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

namespace pushonce::test::chaos {

class fleet {
 public:
  fleet(const redis_server& redis, std::string logs)
      : d(pushonce::test::deployment_options{redis.url(), redis.port(), ns, checker_env(),
                                             std::move(logs), "warn"}) {}

  // The checks at the end read every outbox entry of the run back: nothing may be trimmed
  // (the default outbox retention, 60 s, is shorter than the run).
  static pushonce::test::environment checker_env() {
    return {{"PUSHONCE_DEDUP_WINDOW_MS", "600000"}, {"PUSHONCE_OUTBOX_RETENTION_MS", "600000"}};
  }

  void start_worker(std::size_t slot) {
    auto id = fmt::format("w{}-{}", slot, ++generation_);
    if (workers.size() <= slot) workers.resize(slot + 1);
    kill9(workers[slot]);
    std::vector<std::string> args{"--id", id, "--lease-ms", "1000"};
    // PUSHONCE_CHAOS_WAIT_REPLICAS=N: the workers publish after WAIT N (10 ms; no replica
    // here, so each WAIT times out): a worker killed between a claim and its publish.
    if (auto n = env_or("PUSHONCE_CHAOS_WAIT_REPLICAS", 0); n > 0)
      args.insert(args.end(),
                  {"--wait-replicas", std::to_string(n), "--wait-replicas-timeout-ms", "10"});
    workers[slot] = &d.start_worker(std::move(args));
  }
  void start_leader(std::size_t slot) {
    auto id = fmt::format("L{}-{}", slot, ++generation_);
    if (leaders.size() <= slot) leaders.resize(slot + 1), leader_ids.resize(slot + 1);
    kill9(leaders[slot]);
    leaders[slot] = &d.start_leader({"--id", id, "--lease-ms", "2000", "--queue", queue_name});
    leader_ids[slot] = id;
  }
  void start_gateway(std::size_t slot) {
    if (ports.size() <= slot) ports.resize(slot + 1, 0), gateways.resize(slot + 1);
    if (ports[slot] == 0) ports[slot] = pushonce::test::free_port();
    kill9(gateways[slot]);
    gateways[slot] = &d.start_gateway(
        {"--dev-auth", "--id", fmt::format("g{}-{}", slot, ++generation_)}, ports[slot]);
  }

  /// SIGKILL and reap (a no-op for an empty slot or a process that has exited).
  static void kill9(process* p) {
    if (!p || !p->running()) return;
    p->kill(SIGKILL);
    p->wait(10s);
  }

  std::string digest() const { return d.digest(); }

  pushonce::test::deployment d;
  std::vector<process*> workers, leaders, gateways;
  std::vector<std::string> leader_ids;
  std::vector<std::uint16_t> ports;

 private:
  int generation_ = 0;
};

}  // namespace pushonce::test::chaos
