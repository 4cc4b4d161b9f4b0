// A Redis Cluster master killed with kill -9 under steady traffic, its replica promoted: the
// real programs (pushonce-leader run, 2 pushonce-worker, a pushonce-gateway with a WebSocket
// session per user, publishes through POST /api/publish) on a 3-master cluster with a
// replica per master (cluster-node-timeout 2 s). Once the replica is promoted every path
// recovers: a publish to a user of the failed master is answered 200, every user gets the
// messages accepted after the promotion, `pushonce-leader status` answers. At the end, once
// the sweepers have passed every outbox entry: no session got an id twice or an offset that
// went back, no message accepted after the promotion is missing, and a message accepted
// before it that never arrived is one its user was told about with recovered:false. No
// timing is asserted; each case prints the stall (from the kill to the first delivery of a
// message published after the kill, for the users of the failed master) and the latency
// from acceptance to frame.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "tests/e2e/promotion_traffic.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_promotion_e2e {

using namespace pushonce::test;
using namespace pushonce::test::promotion;
using namespace std::chrono_literals;

namespace {

constexpr const char* api_key = "promotion-api-key-1";
constexpr int user_count = 24;
constexpr long long publish_rate = 40;  // per second

long long ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// Every replica's link to its master is up (INFO replication).
bool replicas_synced(redis_cluster& cluster) {
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    sync_redis r(cluster.node(i).port());
    auto info = r.text({"INFO", "replication"});
    if (info.find("role:slave") != std::string::npos &&
        info.find("master_link_status:up") == std::string::npos)
      return false;
  }
  return true;
}

// Every bus shard's sweep cursor is at its outbox's last entry: every entry is finished, so
// nothing is left to be re-driven (and delivered once more) after the checks.
bool swept(redis_cluster& cluster, const pushonce::keys& k) {
  for (unsigned n = 0; n < k.shards(); ++n) {
    auto outbox = k.bus(n, "outbox");
    sync_redis r(cluster.master_of(cluster.slot_of(outbox)));
    auto last = r.cmd({"XREVRANGE", outbox, "+", "-", "COUNT", "1"});
    if (last->type != REDIS_REPLY_ARRAY || last->elements == 0) continue;
    auto* id = last->element[0]->element[0];
    if (r.text({"GET", k.bus(n, "sweep")}) != std::string(id->str, id->len)) return false;
  }
  return true;
}

// Every bus shard's outbox as one text (to tell a message lost with the master's
// unreplicated writes from one lost later).
std::string outboxes_text(redis_cluster& cluster, const pushonce::keys& k) {
  std::string all;
  for (unsigned n = 0; n < k.shards(); ++n) {
    auto outbox = k.bus(n, "outbox");
    sync_redis r(cluster.master_of(cluster.slot_of(outbox)));
    auto entries = r.cmd({"XRANGE", outbox, "-", "+"});
    for (std::size_t i = 0; entries->type == REDIS_REPLY_ARRAY && i < entries->elements; ++i) {
      auto* fields = entries->element[i]->element[1];
      for (std::size_t j = 1; j < fields->elements; j += 2)
        all.append(fields->element[j]->str, fields->element[j]->len).push_back('\n');
    }
  }
  return all;
}

void failover_under_load(unsigned slot) {
  redis_cluster_options o;
  o.replicas = 1;
  o.node_timeout = 2000ms;
  redis_cluster cluster(o);
  REQUIRE(wait_until(
      [&] {
        try {
          return replicas_synced(cluster);
        } catch (const std::exception&) {
          return false;
        }
      },
      30s, 100ms));
  const std::string ns = unique_namespace("e2e", "promotion");
  const pushonce::keys k(ns, 16);  // the cluster default of --bus-shards
  environment env = cluster.program_env(ns, {{"PUSHONCE_API_KEY", api_key}});
  process leader(program_path("pushonce-leader"), {"run", "--id", "l1"}, env);
  process w1(program_path("pushonce-worker"), {"--id", "w1"}, env);
  process w2(program_path("pushonce-worker"), {"--id", "w2"}, env);
  const auto port = free_port();
  process gateway(program_path("pushonce-gateway"),
                  {"--id", "g1", "--dev-auth", "--listen", "127.0.0.1:" + std::to_string(port)},
                  env);
  auto logs = [&] {
    auto tail = [](std::string s) { return s.substr(s.size() > 3000 ? s.size() - 3000 : 0); };
    return "leader: " + tail(leader.stderr_text()) + "\nw1: " + tail(w1.stderr_text()) +
           "\nw2: " + tail(w2.stderr_text()) + "\ngateway: " + tail(gateway.stderr_text());
  };
  REQUIRE_MESSAGE(
      wait_until(
          [&] {
            return http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 2s).status == 200;
          },
          30s, 100ms),
      logs());

  // The users, and those whose shard the victim serves.
  const auto victim = cluster.master_of(slot);
  const auto victim_slots = cluster.slots_of(victim);
  std::vector<std::string> users;
  std::set<std::string> on_victim;
  for (int i = 0; i < user_count; ++i) {
    auto u = "pu" + std::to_string(i);
    users.push_back(u);
    if (std::binary_search(victim_slots.begin(), victim_slots.end(),
                           cluster.slot_of(k.user(u, ""))))
      on_victim.insert(u);
  }
  REQUIRE(on_victim.size() >= 2);
  std::vector<std::unique_ptr<user_session>> sessions;
  for (const auto& u : users) {
    sessions.push_back(std::make_unique<user_session>(u));
    sessions.back()->start(port);
  }
  auto session_of = [&](const std::string& u) -> user_session& {
    return **std::find_if(sessions.begin(), sessions.end(),
                          [&](const auto& s) { return s->user() == u; });
  };
  REQUIRE(wait_until(
      [&] {
        return std::all_of(sessions.begin(), sessions.end(),
                           [](const auto& s) { return s->welcomed(); });
      },
      30s, 50ms));

  publish_load load(port, api_key, users, publish_rate, 4);
  load.start();
  // Every user gets messages sent after `t`.
  auto all_delivered_since = [&](steady::time_point t) {
    std::set<std::string> waiting(users.begin(), users.end());
    for (const auto& a : load.accepted())
      if (a.sent >= t && waiting.count(a.user) && session_of(a.user).got(a.id))
        waiting.erase(a.user);
    return waiting.empty();
  };
  const auto load_start = steady::now();
  REQUIRE_MESSAGE(wait_until([&] { return all_delivered_since(load_start); }, 30s, 100ms), logs());

  const auto killed_at = steady::now();
  const auto promoted = cluster.fail_master_of(slot);
  const auto promoted_at = steady::now();

  // Every path recovers: a publish to a user of the failed master, the leader's status,
  // and deliveries to every user through the gateway.
  CHECK_MESSAGE(wait_until([&] { return publish_once(port, api_key, *on_victim.begin()) == 200; },
                           60s, 100ms),
                logs());
  CHECK_MESSAGE(wait_until(
                    [&] {
                      auto s = run_cli("pushonce-leader", {"status", "--json"}, env);
                      return s.code() == 0 && s.out.is_object();
                    },
                    60s, 200ms),
                logs());
  CHECK_MESSAGE(wait_until([&] { return all_delivered_since(promoted_at); }, 60s, 100ms), logs());
  load.stop();

  // Quiet: every outbox entry finished, every accepted message received or announced lost.
  const auto accepted = load.accepted();
  auto settled = [&] {
    for (const auto& a : accepted) {
      auto& s = session_of(a.user);
      if (!s.got(a.id) && !(a.accepted <= promoted_at && s.told_not_recovered_since(killed_at)))
        return false;
    }
    return true;
  };
  CHECK_MESSAGE(wait_until(
                    [&] {
                      try {
                        return swept(cluster, k) && settled();
                      } catch (const std::exception&) {
                        return false;
                      }
                    },
                    60s, 200ms),
                logs());
  for (auto& s : sessions) s->stop();

  // --- the counts --------------------------------------------------------------------------
  long long duplicates = 0, stale = 0, lost_after = 0, surfaced = 0, with_master = 0,
            unexplained = 0;
  std::vector<std::string> problems;
  auto note = [&](std::string p) {
    if (problems.size() < 10) problems.push_back(std::move(p));
  };
  std::vector<long long> latency_all, latency_after, first_after;
  std::map<std::string, steady::time_point> sent_of;  // id -> first attempt
  for (const auto& a : accepted) sent_of[a.id] = a.sent;
  for (auto& s : sessions) {
    std::set<std::pair<std::string, std::string>> seen;
    std::optional<long long> first;
    for (const auto& f : s->frames()) {
      if (!seen.insert({f.epoch, f.id}).second) {
        ++duplicates;
        note(fmt::format("{}: id {} twice in epoch {}", s->user(), f.id, f.epoch));
      }
      latency_all.push_back(f.wall_ms - f.ts);
      auto it = sent_of.find(f.id);
      if (it == sent_of.end() || it->second < killed_at) continue;
      latency_after.push_back(f.wall_ms - f.ts);
      if (!first && on_victim.count(s->user())) first = ms_between(killed_at, f.at);
    }
    if (first) first_after.push_back(*first);
    stale += s->stale_offsets();
  }
  const auto outboxes = outboxes_text(cluster, k);
  std::optional<long long> first_accept;
  for (const auto& a : accepted) {
    if (on_victim.count(a.user) && a.sent >= killed_at) {
      auto ms = ms_between(killed_at, a.accepted);
      first_accept = first_accept ? std::min(*first_accept, ms) : ms;
    }
    auto& s = session_of(a.user);
    if (s.got(a.id)) continue;
    if (a.accepted > promoted_at) {
      ++lost_after;
      note(fmt::format("{}: id {} accepted after the promotion, never received", a.user, a.id));
    } else if (s.told_not_recovered_since(killed_at)) {
      ++surfaced;
    } else if (outboxes.find("\"id\":\"" + a.id + "\"") == std::string::npos) {
      ++with_master;  // its outbox entry was not replicated: documented as not guaranteed
    } else {
      ++unexplained;
      note(fmt::format("{}: id {} never received, no recovered:false", a.user, a.id));
    }
  }
  auto summary = fmt::format(
      "cluster promotion (slot {}: master {} killed, replica {} promoted {} ms after the kill): "
      "{} users ({} on the failed master), {} accepted publishes ({} never accepted, {} refused "
      "attempts); duplicates {}, stale offsets {}, lost after the promotion {}, lost around it "
      "{} surfaced as recovered:false + {} with the master's unreplicated writes + {} "
      "unexplained; users of the failed master: the first publish sent after the kill "
      "accepted {} ms after it, the first delivery of such a message p50/max {}/{} ms after it; "
      "accepted-to-frame p50/p99/max {}/{}/{} ms (all), {}/{}/{} ms (published after the kill)",
      slot, victim, promoted, ms_between(killed_at, promoted_at), users.size(), on_victim.size(),
      accepted.size(), load.unaccepted(), load.refused_attempts(), duplicates, stale, lost_after,
      surfaced, with_master, unexplained, first_accept.value_or(-1), percentile(first_after, 0.5),
      percentile(first_after, 1.0), percentile(latency_all, 0.5), percentile(latency_all, 0.99),
      percentile(latency_all, 1.0), percentile(latency_after, 0.5), percentile(latency_after, 0.99),
      percentile(latency_after, 1.0));
  std::printf("%s\n", summary.c_str());
  std::string detail;
  for (const auto& p : problems) detail += p + "\n";
  INFO(summary);
  INFO(detail);
  CHECK(duplicates == 0);
  CHECK(stale == 0);
  CHECK(lost_after == 0);
  CHECK(unexplained == 0);
  WARN(with_master == 0);
  CHECK(load.unaccepted() == 0);
  CHECK(first_after.size() == on_victim.size());
  CHECK_MESSAGE(leader.running(), logs());
  CHECK_MESSAGE(w1.running(), logs());
  CHECK_MESSAGE(w2.running(), logs());
  CHECK_MESSAGE(gateway.running(), logs());
}

}  // namespace

TEST_CASE(
    "cluster promotion: kill -9 of the master of slot 0 under load: every path recovers once "
    "its replica is promoted; 0 duplicates, 0 losses") {
  failover_under_load(0);
}

TEST_CASE(
    "cluster promotion: kill -9 of the master of the middle slots under load: every path "
    "recovers once its replica is promoted; 0 duplicates, 0 losses") {
  failover_under_load(8192);
}

}  // namespace test_cluster_promotion_e2e
