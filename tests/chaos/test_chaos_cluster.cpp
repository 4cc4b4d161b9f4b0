// Chaos on a Redis Cluster (docs/operations.md "Failover semantics"): steady
// publish traffic to many users, each holding a WebSocket session, while one master is
// killed with kill -9 (its replica is promoted) and then `redis-cli --cluster reshard` moves
// slots that hold active users to another master. At the end, per user:
//   - duplicates: an id received twice within one epoch (a session resumed with
//     recovered:true must never see an id again): must be 0;
//   - losses: accepted publishes whose id no session of the user ever received. Those
//     published after the failover completed: must be 0. Those published before: each must
//     be matched by a welcome with recovered:false seen by that user's client;
//   - the time sessions took to recover (a closed session until its next welcome, and the
//     failover until each user's first message after it) is printed.
// Real processes: a 3-master, 3-replica cluster (tests/support/redis_cluster), pushonce-leader
// run, 2 pushonce-worker, 2 pushonce-gateway --dev-auth, all with --redis-cluster.
// The master killed is one that does not serve the bus shard ({bus:0}: outboxes and
// idempotency keys); losing an un-replicated outbox entry loses the message outright, which
// operations.md lists as not guaranteed.
// CTest: chaos_cluster_tests (labels chaos, cluster). PUSHONCE_CHAOS_CLUSTER_RATE (default
// 60 publishes/s) sets the load.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_chaos_cluster {

using namespace pushonce::test;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr int user_count = 48;
constexpr const char* api_key = "chaos-cluster-key";

long long env_or(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  long long n = std::atoll(v);
  return n > 0 ? n : fallback;
}

long long ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

struct welcome_event {
  steady::time_point at;
  bool recovered = true;
  std::string epoch;
};

struct frame_event {
  steady::time_point at;
  std::string epoch, id;
  long long offset = 0;
};

// One user's browser-like client: resumes with since on any close (on the other gateway
// when its own is down) and behaves like gateway/web/pushonce.js on recovered:false: the
// new epoch, offset floor 0.
struct user_session {
  std::string user;
  int gateway = 0;
  // written by the session thread; read after it joined
  std::vector<welcome_event> welcomes;
  std::vector<frame_event> frames;
  std::vector<steady::time_point> closes;
  long long stale_offsets = 0;   // an offset <= the last one of the same epoch
  std::atomic<int> welcomed{0};  // read by the main thread while the session runs

  void run(const std::vector<std::uint16_t>& ports, const std::atomic<bool>& stop) {
    std::string epoch;
    long long last = 0;
    while (!stop) {
      ws_client ws;
      bool connected = false;
      for (std::size_t k = 0; k < ports.size() && !connected; ++k) {
        auto g = (static_cast<std::size_t>(gateway) + k) % ports.size();
        try {
          ws.connect("127.0.0.1", ports[g], "/ws", {}, 2s);
          gateway = static_cast<int>(g);
          connected = true;
        } catch (const std::exception&) {
        }
      }
      if (!connected) {
        pace(100ms, "a reconnect after a refused connect");
        continue;
      }
      std::string hello = epoch.empty() ? hello_frame(user) : hello_frame(user, epoch, last);
      std::optional<std::string> w;
      if (ws.send(hello, 2s)) w = ws.receive(8s);
      auto v = w ? parse_or_null(*w) : boost::json::value();
      if (!v.is_object() || str_field(v.as_object(), "type") != "welcome") {
        closes.push_back(steady::now());
        pace(100ms, "a reconnect after a hello without a welcome");
        continue;
      }
      const auto& wo = v.as_object();
      auto rec = wo.find("recovered");
      bool recovered = rec != wo.end() && rec->value().is_bool() && rec->value().as_bool();
      auto new_epoch = str_field(wo, "epoch");
      if (!recovered || new_epoch != epoch) last = 0;  // re-sync, as the JS client does
      epoch = new_epoch;
      welcomes.push_back({steady::now(), recovered, epoch});
      ++welcomed;
      while (!stop) {
        auto f = ws.receive(200ms);
        if (!f) {
          if (ws.closed()) break;
          continue;
        }
        auto fv = parse_or_null(*f);
        if (!fv.is_object() || str_field(fv.as_object(), "type") != "message") continue;
        long long off = int_field(fv.as_object(), "offset");
        if (off <= last) ++stale_offsets;
        last = std::max(last, off);
        frames.push_back({steady::now(), epoch, str_field(fv.as_object(), "id"), off});
      }
      if (!stop) closes.push_back(steady::now());
    }
  }
};

struct accepted {
  std::string user, id;
  steady::time_point at;
};

// POST /api/publish, one message, retried with the same idempotency key until accepted.
std::optional<std::string> publish_one(const std::vector<std::uint16_t>& ports, std::size_t seq,
                                       const std::string& user, const std::atomic<bool>& stop) {
  std::string key = "m" + std::to_string(seq);
  std::string body = fmt::format(R"({{"user":"{}","data":{{"n":{}}},"id":"{}"}})", user, seq, key);
  headers auth{{"Authorization", std::string("Bearer ") + api_key},
               {"Content-Type", "application/json"}};
  auto give_up = steady::now() + 60s;
  for (std::size_t attempt = 0; steady::now() < give_up; ++attempt) {
    auto port = ports[(seq + attempt) % ports.size()];
    auto r = http_request("127.0.0.1", port, "POST", "/api/publish", body, auth, 5s);
    if (r.status == 200) {
      auto v = parse_or_null(r.body);
      if (v.is_object()) return str_field(v.as_object(), "id");
    }
    if (stop && attempt > 200) break;
    pace(100ms, "a refused publish retried");
  }
  return std::nullopt;
}

long long percentile(std::vector<long long> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// --- the steps of the run, in order ----------------------------------------------------------

// The programs against the cluster: a leader, 2 workers and 2 gateways, ready.
struct cluster_programs {
  std::unique_ptr<process> leader, w1, w2;
  std::vector<std::uint16_t> ports;
  std::vector<std::unique_ptr<process>> gateways;

  // The last 12,000 characters of every program's stderr.
  std::string logs() const {
    std::string out = "leader: " + leader->stderr_text() + "\nw1: " + w1->stderr_text() +
                      "\nw2: " + w2->stderr_text();
    for (auto& g : gateways) out += "\ngateway: " + g->stderr_text();
    return out.substr(out.size() > 12000 ? out.size() - 12000 : 0);
  }
};

cluster_programs start_programs(const environment& env) {
  cluster_programs p;
  p.leader = std::make_unique<process>(program_path("pushonce-leader"),
                                       std::vector<std::string>{"run", "--id", "l1"}, env);
  p.w1 =
      std::make_unique<process>(program_path("pushonce-worker"),
                                std::vector<std::string>{"--id", "w1", "--lease-ms", "1000"}, env);
  p.w2 =
      std::make_unique<process>(program_path("pushonce-worker"),
                                std::vector<std::string>{"--id", "w2", "--lease-ms", "1000"}, env);
  p.ports = {free_port(), free_port()};
  for (std::size_t g = 0; g < p.ports.size(); ++g)
    p.gateways.push_back(std::make_unique<process>(
        program_path("pushonce-gateway"),
        std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(p.ports[g]),
                                 "--dev-auth", "--id", "g" + std::to_string(g)},
        env));
  for (auto port : p.ports)
    REQUIRE(wait_until(
        [&] { return http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 1s).status == 200; },
        30s, 100ms));
  return p;
}

// One WebSocket session per user, each on its own thread; returns once every one was welcomed.
struct session_threads {
  std::vector<std::unique_ptr<user_session>> sessions;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;

  void start(const std::vector<std::uint16_t>& ports) {
    for (int i = 0; i < user_count; ++i) {
      auto s = std::make_unique<user_session>();
      s->user = "cu" + std::to_string(i);
      s->gateway = i % 2;
      sessions.push_back(std::move(s));
    }
    for (auto& s : sessions) threads.emplace_back([&, p = s.get()] { p->run(ports, stop); });
    REQUIRE(wait_until(
        [&] {
          for (auto& s : sessions)
            if (s->welcomed == 0) return false;
          return true;
        },
        30s, 50ms));
  }
  void join() {
    stop = true;
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
  ~session_threads() { join(); }
};

// `rate` publishes/s round-robin over the users, from 4 threads, each retried until accepted.
struct publish_load {
  std::mutex acc_mutex;
  std::vector<accepted> acc;
  std::atomic<long long> unaccepted{0};
  std::atomic<std::size_t> next_seq{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> publishers;

  void start(const std::vector<std::uint16_t>& ports,
             const std::vector<std::unique_ptr<user_session>>& sessions, long long rate) {
    const auto load_start = steady::now();
    for (int t = 0; t < 4; ++t)
      publishers.emplace_back([&, ports, rate, load_start] {
        while (!stop) {
          auto seq = next_seq++;
          auto due =
              load_start + std::chrono::milliseconds(static_cast<long long>(seq) * 1000 / rate);
          std::this_thread::sleep_until(due);
          if (stop) break;
          const auto& user = sessions[seq % sessions.size()]->user;
          auto id = publish_one(ports, seq, user, stop);
          std::lock_guard lock(acc_mutex);
          if (id)
            acc.push_back({user, *id, steady::now()});
          else
            ++unaccepted;
        }
      });
  }
  void join() {
    stop = true;
    for (auto& t : publishers)
      if (t.joinable()) t.join();
  }
  ~publish_load() { join(); }
};

struct failover_times {
  steady::time_point start, done;
};

// kill -9 a master that serves active users but not the bus shard (outboxes, idempotency
// keys), through one of its users' slots: its replica is promoted.
failover_times kill_a_master(redis_cluster& cluster, const pushonce::keys& k,
                             const std::vector<std::unique_ptr<user_session>>& sessions) {
  const auto bus_master = cluster.master_of(cluster.slot_of(k.bus(0, "outbox")));
  std::uint16_t victim = 0;
  for (auto m : cluster.masters())
    if (m != bus_master) victim = m;
  REQUIRE(victim != 0);
  std::optional<unsigned> victim_slot;
  for (auto& s : sessions) {
    auto slot = cluster.slot_of(k.user(s->user, ""));
    if (cluster.master_of(slot) == victim) {
      victim_slot = slot;
      break;
    }
  }
  REQUIRE(victim_slot);
  failover_times t;
  t.start = steady::now();
  const auto promoted = cluster.fail_master_of(*victim_slot);
  t.done = steady::now();
  MESSAGE("failover: master ", victim, " killed, replica ", promoted, " promoted in ",
          ms_between(t.start, t.done), " ms");
  return t;
}

// Reshard with redis-cli, as an operator would: it moves the lowest-numbered slots of the
// source, so ask for as many as it takes to include the slots of 6 active users.
void move_slots_of_active_users(redis_cluster& cluster, const pushonce::keys& k,
                                const std::vector<std::unique_ptr<user_session>>& sessions) {
  auto masters = cluster.masters();
  REQUIRE(masters.size() >= 2);
  const auto from = masters[0], to = masters[1];
  const auto from_slots = cluster.slots_of(from);
  std::set<unsigned> active;  // slots of active users that `from` serves
  for (auto& s : sessions) {
    auto slot = cluster.slot_of(k.user(s->user, ""));
    if (std::binary_search(from_slots.begin(), from_slots.end(), slot)) active.insert(slot);
  }
  REQUIRE(!active.empty());
  auto last = active.begin();
  std::advance(last, std::min<std::size_t>(active.size(), 6) - 1);
  const auto count = static_cast<unsigned>(
      std::lower_bound(from_slots.begin(), from_slots.end(), *last) - from_slots.begin() + 1);
  const auto move_start = steady::now();
  cluster.reshard_with_cli(from, to, count);
  const auto move_done = steady::now();
  std::size_t moved = 0;
  for (auto slot : active) moved += cluster.master_of(slot) == to ? 1 : 0;
  CHECK(moved == static_cast<std::size_t>(std::distance(active.begin(), last)) + 1);
  MESSAGE("redis-cli --cluster reshard: ", count, " slots (", moved,
          " of them with active users) from ", from, " to ", to, " in ",
          ms_between(move_start, move_done), " ms");
}

// What the sessions received against what was accepted.
struct delivery_counts {
  long long duplicates = 0, stale = 0, lost_after = 0, lost_explained = 0, lost_unexplained = 0,
            not_recovered = 0;
  std::vector<std::string> problems;  // the first 8
};

delivery_counts count_deliveries(const std::vector<std::unique_ptr<user_session>>& sessions,
                                 const std::vector<accepted>& acc, const failover_times& fo) {
  delivery_counts c;
  std::map<std::string, user_session*> by_user;
  for (auto& s : sessions) by_user[s->user] = s.get();
  for (auto& s : sessions) {
    std::set<std::pair<std::string, std::string>> seen;  // (epoch, id)
    for (auto& f : s->frames)
      if (!seen.insert({f.epoch, f.id}).second) {
        ++c.duplicates;
        if (c.problems.size() < 8)
          c.problems.push_back(fmt::format("{}: id {} twice in epoch {}", s->user, f.id, f.epoch));
      }
    c.stale += s->stale_offsets;
    for (auto& w : s->welcomes) c.not_recovered += !w.recovered;
  }
  std::map<std::string, std::set<std::string>> received;
  for (auto& s : sessions)
    for (auto& f : s->frames) received[s->user].insert(f.id);
  for (auto& a : acc) {
    if (received[a.user].count(a.id)) continue;
    auto* s = by_user[a.user];
    bool surfaced = std::any_of(s->welcomes.begin(), s->welcomes.end(),
                                [&](auto& w) { return !w.recovered && w.at >= fo.start; });
    if (a.at > fo.done) {
      ++c.lost_after;
      if (c.problems.size() < 8)
        c.problems.push_back(fmt::format("{}: id {} lost (after)", a.user, a.id));
    } else if (surfaced) {
      ++c.lost_explained;
    } else {
      ++c.lost_unexplained;
      if (c.problems.size() < 8)
        c.problems.push_back(fmt::format("{}: id {} lost, no recovered:false", a.user, a.id));
    }
  }
  return c;
}

// Recovery: a session closed after the failover began, until its next welcome; and the
// failover until each user's first frame after it.
struct recovery_times {
  std::vector<long long> reconnect_ms, first_frame_ms;
  long long closed_sessions = 0;
};

recovery_times measure_recovery(const std::vector<std::unique_ptr<user_session>>& sessions,
                                const failover_times& fo) {
  recovery_times r;
  for (auto& s : sessions) {
    for (auto c : s->closes) {
      if (c < fo.start) continue;
      ++r.closed_sessions;
      for (auto& w : s->welcomes)
        if (w.at >= c) {
          r.reconnect_ms.push_back(ms_between(c, w.at));
          break;
        }
    }
    for (auto& f : s->frames)
      if (f.at >= fo.done) {
        r.first_frame_ms.push_back(ms_between(fo.start, f.at));
        break;
      }
  }
  return r;
}

}  // namespace

TEST_CASE(
    "chaos cluster: kill -9 a master and move slots of active users under load: 0 duplicates, "
    "0 losses after the failover, every loss around it surfaced as recovered:false" *
    doctest::test_suite("cluster")) {
  const long long rate = env_or("PUSHONCE_CHAOS_CLUSTER_RATE", 60);
  const auto run_start = steady::now();
  redis_cluster cluster;
  const std::string ns = unique_namespace("chaos", "cluster");
  pushonce::keys k(ns, 16);  // the cluster default of --bus-shards
  environment env = cluster.program_env(ns, {{"PUSHONCE_API_KEY", api_key},
                                             {"PUSHONCE_DEDUP_WINDOW_MS", "600000"},
                                             {"PUSHONCE_OUTBOX_RETENTION_MS", "600000"},
                                             {"PUSHONCE_LOG_LEVEL", "warn"}});
  auto programs = start_programs(env);
  session_threads users;
  users.start(programs.ports);
  publish_load load;
  load.start(programs.ports, users.sessions, rate);

  // The load runs 8 s, then through the failover, 3 s more, the slot move and 12 s more.
  pace(8s, "the load before the failover");
  const auto fo = kill_a_master(cluster, k, users.sessions);
  pace(3s, "the load between the failover and the slot move");
  move_slots_of_active_users(cluster, k, users.sessions);
  pace(12s, "the load after the slot move");
  load.join();
  // The sweeper re-drives what the failover lost and sessions catch up; what never arrives
  // by then counts as lost (explained by a recovered:false welcome or not).
  observe_quiet(8s, "the last redeliveries and resumes after the load");
  users.join();

  // --- the counts --------------------------------------------------------------------------
  const auto c = count_deliveries(users.sessions, load.acc, fo);
  const auto rec = measure_recovery(users.sessions, fo);
  auto status = run_cli("pushonce-leader", {"status", "--json"}, env);
  long long delivered = status.out.is_object() ? counter(status.out.as_object(), "delivered") : -1;
  long long redelivered =
      status.out.is_object() ? counter(status.out.as_object(), "redelivered") : -1;
  auto summary = fmt::format(
      "chaos cluster: {} s, {} users, {} accepted publishes ({} never accepted), delivered {}, "
      "redelivered {}; duplicates {}, stale offsets {}, losses after the failover {}, losses "
      "around it {} (surfaced as recovered:false) + {} unexplained; recovered:false welcomes {}; "
      "sessions closed after the failover {}, reconnect p50/max {}/{} ms; first frame after the "
      "failover p50/max {}/{} ms (from the kill)",
      ms_between(run_start, steady::now()) / 1000, user_count, load.acc.size(),
      load.unaccepted.load(), delivered, redelivered, c.duplicates, c.stale, c.lost_after,
      c.lost_explained, c.lost_unexplained, c.not_recovered, rec.closed_sessions,
      percentile(rec.reconnect_ms, 0.5), percentile(rec.reconnect_ms, 1.0),
      percentile(rec.first_frame_ms, 0.5), percentile(rec.first_frame_ms, 1.0));
  std::printf("%s\n", summary.c_str());
  std::string detail;
  for (auto& p : c.problems) detail += p + "\n";
  INFO(summary);
  INFO(detail);
  CHECK(c.duplicates == 0);
  CHECK(c.stale == 0);
  CHECK(c.lost_after == 0);
  CHECK(c.lost_unexplained == 0);
  CHECK(load.unaccepted.load() == 0);
  CHECK(load.acc.size() > static_cast<std::size_t>(rate * 15));
  CHECK(rec.first_frame_ms.size() == users.sessions.size());  // every user got traffic after it
  CHECK_MESSAGE(programs.leader->running(), programs.logs());
  CHECK_MESSAGE(programs.w1->running(), programs.logs());
  CHECK_MESSAGE(programs.w2->running(), programs.logs());
  for (auto& g : programs.gateways) CHECK_MESSAGE(g->running(), programs.logs());
}

}  // namespace test_chaos_cluster
