#pragma once
// The faults of the chaos run, on a schedule while the load runs: kill -9 of a random worker
// every second (a new one takes its slot); in each 70 s cycle kill -9 of the active leader at
// 20 % (restarted 4 s later, as a standby), of a gateway at 40 % (restarted on its port 2 s
// later), a Redis restart at 60 % and a Redis crash (kill -9) and restart at 80 %.

#include <chrono>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "tests/chaos/chaos_common.hpp"
#include "tests/chaos/chaos_fleet.hpp"
#include "tests/chaos/chaos_probe.hpp"
#include "tests/support/redis_server.hpp"

namespace pushonce::test::chaos {

class fault_injector {
 public:
  /// The schedule starts at `load_start` and lasts `seconds`.
  fault_injector(fleet& f, redis_server& redis, probe& db, const pushonce::keys& k,
                 steady::time_point load_start, std::chrono::seconds seconds);

  /// Carries out what is due at `now` (called every 20 ms while the load runs).
  void step(steady::time_point now);
  /// Restarts the leader or gateway still waiting for its restart (the load has ended).
  void finish();
  /// What was done, when ("; " between faults).
  std::string log() const;

  long long worker_kills = 0, leader_kills = 0, gateway_kills = 0, redis_restarts = 0;
  long long leader_takeover_ms = -1;  // from the kill to another leader's id in Redis
  long long redis_down_ms = 0;        // the longest restart

 private:
  struct event {
    steady::time_point at;
    std::string what;
  };
  static constexpr auto never =
      steady::time_point::max();  // (std::optional trips -Wmaybe-uninitialized)

  fleet& f_;
  redis_server& redis_;
  probe& db_;
  pushonce::keys k_;
  steady::time_point load_start_;
  std::chrono::seconds seconds_;
  std::vector<event> events_;
  std::mt19937 rng_{4242};
  std::vector<std::string> log_;
  steady::time_point next_worker_kill_;
  steady::time_point leader_restart_at_ = never, gateway_restart_at_ = never,
                     leader_killed_at_ = never;
  std::size_t killed_leader_ = 0, killed_gateway_ = 0;
  std::string killed_leader_id_;
};

}  // namespace pushonce::test::chaos
