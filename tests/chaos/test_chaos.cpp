// Chaos (docs/protocol.md "Guarantees", docs/operations.md): the whole system
// under steady load while its parts are killed, then every WebSocket session is checked
// for exactly-once, in-order delivery.
//
// Real processes on loopback: one redis-server (AOF, appendfsync always), 2 pushonce-leader
// run (one active, one standby, --lease-ms 2000), 5 pushonce-worker (--lease-ms 1000) and 2
// pushonce-gateway --dev-auth. 200 users each hold one WebSocket session (one thread each)
// that keeps {epoch, last offset} and resumes with hello since on any disconnect, on the
// other gateway when its own is down. Load: custom publishes through core/publisher.hpp
// (unique idempotency key per message, retried with the same key until accepted) plus
// assignments (every user joins; a driver keeps releasing assigned resources, whose holders
// join again). Faults while the load runs: kill -9 of a random worker every second (a new
// one takes its place), kill -9 of the active leader (restarted later as a standby), kill
// -9 of a gateway (restarted on its port ~2 s later), a Redis restart and a Redis crash
// (kill -9) with restart.
//
// At the end, once quiet: every outbox entry is in its user's inbox exactly once, every
// custom publish's id too, inbox offsets are 1..N, and every session received exactly its
// user's inbox, in order: 0 duplicates, 0 losses, 0 gaps, no resume refused
// (recovered:false), no dead letter. One summary line goes to stdout.
//
// PUSHONCE_CHAOS_SECONDS (default 70) sets how long the load runs (the fault cycle repeats
// every 70 s in longer soaks); PUSHONCE_CHAOS_RATE (default 300) custom publishes per
// second. PUSHONCE_CHAOS_WAIT_REPLICAS=1 runs the workers with --wait-replicas 1 (the
// frames published after the claim: a killed worker leaves deliveries for the sweeper to
// publish). PUSHONCE_KEEP_TEST_DIRS keeps the processes' logs.
//
// The parts, each in its own file: chaos_fleet (the processes, in slots), chaos_session (one
// user's WebSocket session), chaos_load (publishes and assignments), chaos_faults (the fault
// schedule), chaos_checks (exactly once, from Redis and the sessions' records) and
// chaos_probe (a synchronous, reconnecting look at Redis).

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/keys.hpp"
#include "core/message.hpp"
#include "tests/chaos/chaos_checks.hpp"
#include "tests/chaos/chaos_common.hpp"
#include "tests/chaos/chaos_faults.hpp"
#include "tests/chaos/chaos_fleet.hpp"
#include "tests/chaos/chaos_load.hpp"
#include "tests/chaos/chaos_probe.hpp"
#include "tests/chaos/chaos_session.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_chaos {

using namespace pushonce::test::chaos;
using pushonce::test::int_field;
using pushonce::test::observe_quiet;
using pushonce::test::pace;
using pushonce::test::parse_or_null;
using pushonce::test::redis_server;
using pushonce::test::str_field;
using pushonce::test::unless_redis_down;
using pushonce::test::wait_until;

TEST_CASE(
    "chaos: kill -9 workers, leader, gateway and Redis under load: every session "
    "gets every message exactly once, in order") {
  const auto seconds = std::chrono::seconds(env_or("PUSHONCE_CHAOS_SECONDS", 70));
  const long long rate = env_or("PUSHONCE_CHAOS_RATE", 300);
  const auto run_start = steady::now();
  pushonce::keys k(ns);

  pushonce::test::temp_dir logs("pushonce-chaos");
  pushonce::test::redis_server_options ro;
  ro.appendonly = true;  // appendfsync always
  ro.ready_timeout = 20s;
  redis_server redis(ro);
  probe db(redis.port());

  // --- the system ---------------------------------------------------------------------
  fleet f(redis, logs.path());
  f.start_leader(0);
  REQUIRE_MESSAGE(wait_until(
                      [&] {
                        return db.integer({"EXISTS", k.plain("leader")}) == 1;
                      },
                      10s),
                  f.digest());
  f.start_leader(1);  // the standby
  for (std::size_t i = 0; i < worker_count; ++i) f.start_worker(i);
  for (std::size_t i = 0; i < gateway_count; ++i) f.start_gateway(i);
  REQUIRE_MESSAGE(f.d.wait_ready(20s), f.d.ready_failure());

  {
    std::vector<std::string> add{"resource", "add"};
    for (int i = 1; i <= resource_count; ++i) add.push_back("r" + std::to_string(i));
    add.push_back("--json");
    auto r = f.d.admin(add);
    REQUIRE_MESSAGE(r.code() == 0, r.describe());
  }

  // --- the sessions ---------------------------------------------------------------------
  std::vector<std::unique_ptr<session_state>> sessions;
  std::atomic<bool> stop_sessions{false};
  std::vector<std::thread> session_threads;
  const auto ports = f.ports;  // gateways restart on the same ports
  for (int i = 0; i < user_count; ++i) {
    auto s = std::make_unique<session_state>();
    s->user = user_name(i);
    s->gateway = i % gateway_count;
    sessions.push_back(std::move(s));
  }
  struct joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~joiner() {
      stop = true;
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } join_sessions{stop_sessions, session_threads};
  for (auto& s : sessions)
    session_threads.emplace_back([&, p = s.get()] { run_session(*p, ports, stop_sessions); });
  REQUIRE_MESSAGE(wait_until(
                      [&] {
                        for (auto& s : sessions)
                          if (!s->welcomed) return false;
                        return true;
                      },
                      30s, 100ms),
                  f.digest());

  // --- load and faults ------------------------------------------------------------------
  load_result load;
  load_driver driver(redis.url(), seconds, rate, load);
  driver.start();
  const auto load_start = steady::now();

  fault_injector faults(f, redis, db, k, load_start, seconds);
  while (!load.done) {
    pace(20ms, "the fault schedule looked at every 20 ms");
    faults.step(steady::now());
  }
  driver.join();
  faults.finish();
  const auto load_end = steady::now();
  INFO("faults: ", faults.log());
  INFO("process logs:\n", f.digest());
  REQUIRE_MESSAGE(driver.error().empty(), driver.error());
  CHECK(load.unaccepted == 0);
  CHECK(load.first_try_duplicates == 0);

  // --- quiet: every outbox entry delivered, every session at its inbox's end -------------
  const std::string bus_outbox = k.bus(0, "outbox");
  const std::string queue_outbox = k.queue(queue_name, "outbox");
  std::vector<long long> inbox_len(user_count, 0);
  long long outboxed = 0, inboxed = 0;
  auto quiet_now = [&] {
    std::vector<words> cmds{{"PING"}, {"PING"}};
    for (int i = 0; i < user_count; ++i) cmds.push_back({"XLEN", k.user(user_name(i), "inbox")});
    auto rs = db.pipeline(cmds);
    outboxed = 0;  // messages, not entries: a publish batch is one entry, one line each
    for (const auto& stream : {bus_outbox, queue_outbox})
      for (auto& e : read_stream(db, stream))
        outboxed += static_cast<long long>(pushonce::split_bus_payload(e.fields["m"]).size());
    inboxed = 0;
    bool sessions_done = true;
    for (int i = 0; i < user_count; ++i) {
      inbox_len[static_cast<std::size_t>(i)] = rs[static_cast<std::size_t>(i) + 2]->integer;
      inboxed += inbox_len[static_cast<std::size_t>(i)];
      sessions_done = sessions_done && sessions[static_cast<std::size_t>(i)]->last_offset ==
                                           inbox_len[static_cast<std::size_t>(i)];
    }
    return outboxed == inboxed && sessions_done;
  };
  // (the last Redis restart may still be loading its AOF)
  bool quiet = wait_until(unless_redis_down(quiet_now), 60s, 250ms);
  const auto quiet_ms = ms_since(load_end);
  // Still the same a while later (more than a lease and a sweep): nothing arrives twice.
  long long inboxed_at_quiet = inboxed;
  if (quiet) {
    observe_quiet(2500ms, "a second delivery after a lease and a sweep");
    quiet = wait_until(unless_redis_down(quiet_now), 5s, 250ms);
  }
  long long behind_sessions = 0;
  for (int i = 0; i < user_count; ++i)
    if (sessions[static_cast<std::size_t>(i)]->last_offset !=
        inbox_len[static_cast<std::size_t>(i)])
      ++behind_sessions;
  stop_sessions = true;
  for (auto& t : session_threads) t.join();
  session_threads.clear();
  const auto run_ms = ms_since(run_start);

  // --- the checks -----------------------------------------------------------------------
  auto r = check_delivery(db, k, sessions, load);

  auto dead_letters = db.integer({"XLEN", k.plain("dead-letters")});
  // The workers' counters (statistics: a worker killed with SIGKILL loses up to 100 ms).
  auto stat = [&](const char* name) {
    auto v = db.string({"HGET", k.plain("stats"), name});
    return v ? std::atoll(v->c_str()) : 0LL;
  };
  const long long redelivered = stat("redelivered"), suppressed = stat("duplicates_suppressed");
  // The leader assigned each freed resource once: r.assignments + free resources at the end
  // = resources + releases that happened (ambiguous ones may or may not have).
  auto free_now = db.integer({"ZCARD", k.queue(queue_name, "res:free")});
  auto holders = db.cmd({"HGETALL", k.queue(queue_name, "res:holder")});
  long long base = resource_count + load.releases_ok;
  long long accounted = r.assignments + free_now;
  bool assignments_consistent = accounted >= base && accounted <= base + load.releases_ambiguous;
  std::set<std::string> holding_users;
  for (size_t i = 1; holders->type == REDIS_REPLY_ARRAY && i < holders->elements; i += 2)
    holding_users.insert(std::string(holders->element[i]->str, holders->element[i]->len));
  auto assigned_users = db.integer({"HLEN", k.queue(queue_name, "assigned")});

  auto summary = fmt::format(
      "chaos: published {} (custom {}, assignments {}) | sessions {} | frames {} | "
      "duplicates {} | losses {} | gaps {} | not recovered {} | dead letters {} | "
      "worker kills {} | leader kills {} (takeover {} ms) | gateway kills {} | "
      "redis restarts {} (max {} ms down) | reconnects {} | publish retries {} "
      "(landed before {}) | releases {} (ambiguous {}) | worst delay {} ms (p99 {} ms) | "
      "redelivered {} | claims lost {} | quiet after {} ms | run {:.1f} s",
      outboxed, r.custom_ids, r.assignments, sessions.size(), r.frames, r.duplicates, r.losses,
      r.gaps, r.not_recovered, dead_letters, faults.worker_kills, faults.leader_kills,
      faults.leader_takeover_ms, faults.gateway_kills, faults.redis_restarts, faults.redis_down_ms,
      r.reconnects, load.publish_failures, load.retried_duplicates, load.releases_ok,
      load.releases_ambiguous,
      r.latencies.empty() ? 0 : *std::max_element(r.latencies.begin(), r.latencies.end()),
      percentile(r.latencies, 0.99), redelivered, suppressed, quiet_ms,
      static_cast<double>(run_ms) / 1000.0);
  std::printf("%s\n", summary.c_str());
  std::fflush(stdout);

  INFO(summary);
  INFO("details:\n", fmt::format("{}", fmt::join(r.details, "\n")));
  CHECK_MESSAGE(quiet, "not quiet within 60 s: outbox entries ", outboxed, ", inbox entries ",
                inboxed, " (", inboxed_at_quiet, " at first quiet), sessions behind ",
                behind_sessions);
  CHECK(r.duplicates == 0);
  CHECK(r.losses == 0);
  CHECK(r.gaps == 0);
  CHECK(r.phantoms == 0);
  CHECK(r.mismatches == 0);  // a session's frame at offset N is the inbox's entry N
  CHECK(r.not_recovered == 0);
  CHECK(r.welcome_failures == 0);
  CHECK(r.protocol_errors == 0);
  CHECK(r.inbox_malformed == 0);
  CHECK(r.inbox_offset_errors == 0);
  CHECK(dead_letters == 0);
  // Idempotency: one message per key, whatever the retries.
  CHECK(static_cast<long long>(r.custom_ids) == static_cast<long long>(load.custom.size()));
  // (a publish batch is one outbox entry, one line per message)
  CHECK(r.bus_messages == static_cast<long long>(r.custom_ids));
  CHECK(outboxed >= 20000 * seconds.count() / 70 * rate / 300);
  CHECK(r.assignments > 0);
  CHECK_MESSAGE(assignments_consistent, "assignments ", r.assignments, " + free ", free_now,
                " vs resources + releases ", base, " (+ up to ", load.releases_ambiguous,
                " ambiguous)");
  CHECK(static_cast<long long>(holding_users.size()) == assigned_users);
  CHECK(faults.leader_kills >= 1);
  CHECK(faults.leader_takeover_ms >= 0);
  CHECK(faults.gateway_kills >= 1);
  CHECK(faults.redis_restarts >= 2);
  CHECK(faults.worker_kills >= seconds.count() - 2);
}

}  // namespace test_chaos
