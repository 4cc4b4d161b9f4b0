#include "tests/chaos/chaos_faults.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <utility>

namespace pushonce::test::chaos {

fault_injector::fault_injector(fleet& f, redis_server& redis, probe& db, const pushonce::keys& k,
                               steady::time_point load_start, std::chrono::seconds seconds)
    : f_(f),
      redis_(redis),
      db_(db),
      k_(k),
      load_start_(load_start),
      seconds_(seconds),
      next_worker_kill_(load_start + 1s) {
  auto total = std::chrono::duration_cast<std::chrono::milliseconds>(seconds_);
  auto cycle = std::min<std::chrono::milliseconds>(total, 70s);
  for (auto c = 0ms; c < total; c += cycle) {
    auto at = [&](double fraction) {
      return load_start_ + c +
             std::chrono::milliseconds(
                 static_cast<long long>(fraction * static_cast<double>(cycle.count())));
    };
    events_.push_back({at(0.2), "leader-kill"});
    events_.push_back({at(0.4), "gateway-kill"});
    events_.push_back({at(0.6), "redis-restart"});
    events_.push_back({at(0.8), "redis-crash"});
  }
}

void fault_injector::step(steady::time_point now) {
  if (now >= next_worker_kill_ && now < load_start_ + seconds_) {
    next_worker_kill_ += 1s;
    auto slot = std::uniform_int_distribution<std::size_t>(0, worker_count - 1)(rng_);
    fleet::kill9(f_.workers[slot]);
    f_.start_worker(slot);
    ++worker_kills;
  }
  if (leader_killed_at_ != never && leader_takeover_ms < 0) {
    try {
      auto id = db_.string({"HGET", k_.plain("leader"), "id"});
      if (id && *id != killed_leader_id_) leader_takeover_ms = ms_since(leader_killed_at_);
    } catch (const std::exception&) {
    }
  }
  if (now >= leader_restart_at_) {
    f_.start_leader(killed_leader_);  // a standby now
    leader_restart_at_ = never;
  }
  if (now >= gateway_restart_at_) {
    f_.start_gateway(killed_gateway_);
    gateway_restart_at_ = never;
  }
  for (auto& e : events_) {
    if (e.what.empty() || now < e.at) continue;
    auto what = std::exchange(e.what, "");
    auto t = ms_since(load_start_);
    if (what == "leader-kill") {
      std::optional<std::string> pid;
      try {
        pid = db_.string({"HGET", k_.plain("leader"), "pid"});
      } catch (const std::exception&) {
      }
      bool done = false;
      for (std::size_t i = 0; i < f_.leaders.size() && pid; ++i) {
        if (f_.leaders[i] && std::to_string(f_.leaders[i]->pid()) == *pid) {
          killed_leader_id_ = f_.leader_ids[i];
          fleet::kill9(f_.leaders[i]);
          killed_leader_ = i;
          leader_killed_at_ = steady::now();
          leader_takeover_ms = -1;
          leader_restart_at_ = steady::now() + 4s;
          ++leader_kills;
          done = true;
          log_.push_back(
              fmt::format("{} ms: kill -9 leader {} (pid {})", t, killed_leader_id_, *pid));
        }
      }
      if (!done) e.what = what, e.at = now + 500ms;  // no leader right now: try again
    } else if (what == "gateway-kill") {
      killed_gateway_ = std::uniform_int_distribution<std::size_t>(0, gateway_count - 1)(rng_);
      fleet::kill9(f_.gateways[killed_gateway_]);
      gateway_restart_at_ = steady::now() + 2s;
      ++gateway_kills;
      log_.push_back(fmt::format("{} ms: kill -9 gateway {}", t, killed_gateway_));
    } else if (what == "redis-restart" || what == "redis-crash") {
      auto t0 = steady::now();
      if (what == "redis-crash") redis_.kill();
      redis_.restart();
      auto down = ms_since(t0);
      redis_down_ms = std::max(redis_down_ms, down);
      ++redis_restarts;
      log_.push_back(fmt::format("{} ms: {} ({} ms down)", t, what, down));
    }
  }
}

void fault_injector::finish() {
  if (leader_restart_at_ != never) f_.start_leader(killed_leader_);
  if (gateway_restart_at_ != never) f_.start_gateway(killed_gateway_);
  leader_restart_at_ = gateway_restart_at_ = never;
}

std::string fault_injector::log() const {
  return fmt::format("{}", fmt::join(log_, "; "));
}

}  // namespace pushonce::test::chaos
