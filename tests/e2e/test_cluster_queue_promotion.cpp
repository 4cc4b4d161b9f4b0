// Exactly-once of queue assignments when the Redis Cluster master of the queue's slot
// ({q:default}) is killed with kill -9 and its replica promoted. The queue's state, id
// sequence and outbox live in that slot, each user's claim records and inbox in the user's
// bus-shard slot (other masters, or the same one): a rollback of the queue slot must not
// make an assignment heard twice, lost, or held by another user than the one told. The
// real programs on 3 masters with a replica each (cluster-node-timeout 2 s): a leader with
// --wait-replicas 1 (a batch's bus message only once the replica holds it), 2 workers, a
// gateway; every user has a WebSocket session that joins the queue and resumes on any
// close; resources are added in a steady trickle until every user is assigned, and the
// queue slot's master is killed in the middle. Then, from outside: every user heard exactly
// one assignment id (a re-sync may repeat it in a new epoch, never within one), ids are
// unique across users, and the queue's holders in Redis are exactly the users told, each
// holding the resource its message named. The killed master is not restarted, so the
// promoted one has no replica: every later WAIT 1 falls short, the leader holds its bus
// messages back, and the second half of the users hear theirs through the workers'
// sweeper re-driving the outbox entries after a lease (the printed summary: ~11 s from
// the kill until every user is assigned).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "tests/support/cluster_reads.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_queue_promotion_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr int user_count = 200;
constexpr int resources_per_tick = 5;  // every 100 ms: 50 resources/s
const std::string queue = "default";

struct assignment_seen {
  std::string epoch, id, kind, resource;
  long long offset = 0;
};

// One browser-like session: hello (resuming with its epoch and last offset after any
// close, as gateway/web/pushonce.js does), a join of the queue until the gateway answers
// joined (or conflict: queued or assigned already), then every message frame recorded.
class queue_session {
 public:
  explicit queue_session(std::string user) : user_(std::move(user)) {}
  ~queue_session() { stop(); }
  queue_session(const queue_session&) = delete;
  queue_session& operator=(const queue_session&) = delete;

  void start(std::uint16_t port) {
    thread_ = std::thread([this, port] { run(port); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::string& user() const { return user_; }
  bool joined() const { return joined_; }
  long long not_recovered() const { return not_recovered_; }
  std::vector<assignment_seen> frames() const {
    std::lock_guard lock(m_);
    return frames_;
  }
  /// The distinct ids of the assignment frames received.
  std::set<std::string> assignment_ids() const {
    std::lock_guard lock(m_);
    std::set<std::string> ids;
    for (const auto& f : frames_)
      if (f.kind == "assignment") ids.insert(f.id);
    return ids;
  }

 private:
  void run(std::uint16_t port) {
    std::string epoch;
    long long last = 0;
    while (!stop_) {
      ws_client ws;
      try {
        ws.connect("127.0.0.1", port, "/ws", {}, 2s);
      } catch (const std::exception&) {
        pace(100ms, "a reconnect after a refused connect");
        continue;
      }
      auto hello = epoch.empty() ? hello_frame(user_) : hello_frame(user_, epoch, last);
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
      if (!recovered && !epoch.empty()) ++not_recovered_;
      epoch = new_epoch;
      if (!joined_ && !ws.send(R"({"op":"join","queue":")" + queue + "\"}", 2s)) continue;
      while (!stop_) {
        auto f = ws.receive(200ms);
        if (!f) {
          if (ws.closed()) break;
          continue;
        }
        auto fv = parse_or_null(*f);
        if (!fv.is_object()) continue;
        const auto& fo = fv.as_object();
        auto type = str_field(fo, "type");
        if (type == "joined" || (type == "error" && str_field(fo, "op") == "join" &&
                                 str_field(fo, "code") == "conflict")) {
          joined_ = true;
          continue;
        }
        if (type != "message") continue;
        assignment_seen seen{
            epoch, str_field(fo, "id"), str_field(fo, "kind"), {}, int_field(fo, "offset")};
        auto data = fo.find("data");
        if (data != fo.end() && data->value().is_object())
          seen.resource = str_field(data->value().as_object(), "resource");
        std::lock_guard lock(m_);
        last = std::max(last, seen.offset);
        frames_.push_back(std::move(seen));
      }
    }
  }

  std::string user_;
  std::atomic<bool> stop_{false}, joined_{false};
  std::atomic<long long> not_recovered_{0};
  std::thread thread_;
  mutable std::mutex m_;
  std::vector<assignment_seen> frames_;
};

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

}  // namespace

TEST_CASE(
    "cluster promotion: kill -9 of the master of the queue's slot while assignments flow: "
    "every user hears exactly one assignment, held by them in Redis" *
    doctest::test_suite("cluster")) {
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
  const std::string ns = unique_namespace("e2e", "queue-promotion");
  const pushonce::keys k(ns, 16);  // the cluster default of --bus-shards
  environment env = cluster.program_env(ns);
  process leader(program_path("pushonce-leader"), {"run", "--id", "l1", "--wait-replicas", "1"},
                 env);
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
  // The leader registered the queue (a join before it is refused with not_found).
  const auto registered = k.queue(queue, "registered");
  REQUIRE_MESSAGE(wait_until(
                      [&] {
                        sync_redis r(cluster.master_of(cluster.slot_of(registered)));
                        return r.integer({"EXISTS", registered}) == 1;
                      },
                      30s, 100ms),
                  logs());

  const unsigned slot = cluster.slot_of(k.queue(queue, "outbox"));
  const auto victim = cluster.master_of(slot);
  const auto victim_slots = cluster.slots_of(victim);
  std::vector<std::unique_ptr<queue_session>> sessions;
  int on_victim = 0;
  for (int i = 0; i < user_count; ++i) {
    auto u = "qu" + std::to_string(i);
    if (std::binary_search(victim_slots.begin(), victim_slots.end(),
                           cluster.slot_of(k.user(u, ""))))
      ++on_victim;
    sessions.push_back(std::make_unique<queue_session>(u));
    sessions.back()->start(port);
  }
  REQUIRE_MESSAGE(wait_until(
                      [&] {
                        return std::all_of(sessions.begin(), sessions.end(),
                                           [](const auto& s) { return s->joined(); });
                      },
                      60s, 100ms),
                  logs());
  // Every join is on the replica too: the failover must not take a user out of the queue.
  REQUIRE(cluster.wait_replicated(k.queue(queue, "waiting")) >= 1);

  auto assigned_users = [&] {
    return std::count_if(sessions.begin(), sessions.end(),
                         [](const auto& s) { return !s->assignment_ids().empty(); });
  };

  // The trickle: 5 new resources every 100 ms until every user is assigned. A call refused
  // during the failover is not retried with the same names (it may have been applied); a
  // resource whose add the failover lost is simply not in the pool.
  std::atomic<bool> stop_adding{false};
  std::atomic<long long> add_calls{0}, add_failures{0};
  std::thread adder([&] {
    int next = 0;
    auto tick = steady::now();
    while (!stop_adding) {
      std::vector<std::string> args{"resource", "add"};
      for (int i = 0; i < resources_per_tick; ++i) args.push_back("seat-" + std::to_string(next++));
      args.push_back("--json");
      auto r = run_cli("pushonce-leader", args, env, 10s);
      ++add_calls;
      if (r.code() != 0) ++add_failures;
      tick += 100ms;
      std::this_thread::sleep_until(std::max(tick, steady::now()));
    }
  });
  struct stop_guard {
    std::atomic<bool>& flag;
    std::thread& t;
    ~stop_guard() {
      flag = true;
      if (t.joinable()) t.join();
    }
  } guard{stop_adding, adder};

  // The kill in the middle: once about half the users are assigned.
  REQUIRE_MESSAGE(wait_until([&] { return assigned_users() >= user_count / 2; }, 60s, 20ms),
                  logs());
  const auto assigned_at_kill = assigned_users();
  const auto killed_at = steady::now();
  const auto promoted = cluster.fail_master_of(slot);
  const auto promoted_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - killed_at).count();

  CHECK_MESSAGE(wait_until([&] { return assigned_users() == user_count; }, 60s, 100ms), logs());
  stop_adding = true;
  if (adder.joinable()) adder.join();
  const auto all_assigned_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - killed_at).count();

  // Quiet: the sweepers have passed every outbox entry (the queue's and the bus shards'),
  // so nothing is left to be re-driven after the checks.
  auto swept = [&] { return outboxes_swept(cluster, k, queue); };
  CHECK_MESSAGE(wait_until(swept, 60s, 200ms), logs());
  for (auto& s : sessions) s->stop();

  // --- the checks ----------------------------------------------------------------------------
  const auto holders = hash_of(cluster, k.queue(queue, "res:holder"));  // resource -> user
  const auto assigned = hash_of(cluster, k.queue(queue, "assigned"));   // user -> resource
  std::vector<std::string> problems;
  auto note = [&](std::string p) {
    if (problems.size() < 20) problems.push_back(std::move(p));
  };
  std::map<std::string, std::string> owner_of_id;  // assignment id -> user told
  std::set<std::string> told;                      // users told of an assignment
  long long missing = 0, several = 0, within_epoch = 0, across_epochs = 0, other_kinds = 0,
            wrong_holder = 0, shared_ids = 0, not_recovered = 0;
  for (const auto& s : sessions) {
    not_recovered += s->not_recovered();
    const auto frames = s->frames();
    std::set<std::pair<std::string, std::string>> seen;  // (epoch, id)
    std::map<std::string, std::string> resource_of;      // id -> resource
    for (const auto& f : frames) {
      if (f.kind != "assignment") {
        ++other_kinds;
        note(fmt::format("{}: a {} message, id {}", s->user(), f.kind, f.id));
        continue;
      }
      if (!seen.insert({f.epoch, f.id}).second) {
        ++within_epoch;
        note(fmt::format("{}: id {} twice in epoch {}", s->user(), f.id, f.epoch));
      } else if (resource_of.count(f.id)) {
        ++across_epochs;  // a re-sync's repeat, in a new epoch (the client drops it by id)
      }
      if (resource_of.count(f.id) && resource_of[f.id] != f.resource)
        note(fmt::format("{}: id {} names {} and {}", s->user(), f.id, resource_of[f.id],
                         f.resource));
      resource_of[f.id] = f.resource;
    }
    if (resource_of.empty()) {
      ++missing;
      note(fmt::format("{}: no assignment (assigned in Redis: {})", s->user(),
                       assigned.count(s->user()) ? assigned.at(s->user()) : "none"));
      continue;
    }
    if (resource_of.size() > 1) {
      ++several;
      std::string all;
      for (const auto& [id, r] : resource_of) all += fmt::format(" {}={}", id, r);
      note(fmt::format("{}: {} assignment ids:{}", s->user(), resource_of.size(), all));
    }
    told.insert(s->user());
    for (const auto& [id, resource] : resource_of) {
      auto [it, fresh] = owner_of_id.emplace(id, s->user());
      if (!fresh) {
        ++shared_ids;
        note(fmt::format("id {} told to {} and {}", id, it->second, s->user()));
      }
      auto h = holders.find(resource);
      auto a = assigned.find(s->user());
      if (h == holders.end() || h->second != s->user() || a == assigned.end() ||
          a->second != resource) {
        ++wrong_holder;
        note(fmt::format("{}: told id {} for {}, whose holder in Redis is {}; the user holds {}",
                         s->user(), id, resource, h == holders.end() ? "none" : h->second,
                         a == assigned.end() ? "nothing" : a->second));
      }
    }
  }
  long long untold_holders = 0;
  for (const auto& [resource, user] : holders)
    if (!told.count(user)) {
      ++untold_holders;
      note(fmt::format("{} held by {}, who never heard of it", resource, user));
    }
  const auto summary = fmt::format(
      "cluster queue promotion (slot {} of {{q:{}}}: master {} killed with {} of {} users "
      "assigned, replica {} promoted {} ms after the kill, every user assigned {} ms after "
      "it; {} users on the failed master's bus slots): {} resource add calls ({} refused), "
      "{} holders in Redis; missing {}, several ids {}, twice in an epoch {}, repeated in a "
      "new epoch {}, recovered:false {}, other kinds {}, wrong holder {}, ids shared {}, "
      "holders never told {}",
      slot, queue, victim, assigned_at_kill, user_count, promoted, promoted_ms, all_assigned_ms,
      on_victim, add_calls.load(), add_failures.load(), holders.size(), missing, several,
      within_epoch, across_epochs, not_recovered, other_kinds, wrong_holder, shared_ids,
      untold_holders);
  std::printf("%s\n", summary.c_str());
  std::string detail;
  for (const auto& p : problems) detail += p + "\n";
  INFO(summary);
  INFO(detail);
  CHECK(missing == 0);
  CHECK(several == 0);
  CHECK(within_epoch == 0);
  CHECK(other_kinds == 0);
  CHECK(wrong_holder == 0);
  CHECK(shared_ids == 0);
  CHECK(untold_holders == 0);
  CHECK(holders.size() == static_cast<std::size_t>(user_count));
  CHECK(assigned.size() == static_cast<std::size_t>(user_count));
  CHECK_MESSAGE(leader.running(), logs());
  CHECK_MESSAGE(w1.running(), logs());
  CHECK_MESSAGE(w2.running(), logs());
  CHECK_MESSAGE(gateway.running(), logs());
}

}  // namespace test_cluster_queue_promotion_e2e
