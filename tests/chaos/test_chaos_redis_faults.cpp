// Redis faults that are not a crash, each on a private redis-server with the real programs
// (docs/operations.md "Redis refusing writes", "A slow Redis"):
//
//  - Redis refusing writes: `CONFIG SET maxmemory 1` with noeviction makes every write fail
//    with OOM. /readyz turns 503 with the reason within a few seconds, POST /api/publish
//    answers 503 with Retry-After (never a 500) within the command deadline, the programs
//    keep running; after `CONFIG SET maxmemory 0` /readyz is 200 again and the publish
//    (retried with its idempotency key) is delivered exactly once. (MISCONF, writes refused
//    after a failed save, takes the same path (an error reply of class "unavailable") but is
//    hard to cause on purpose: OOM stands for both.)
//  - A slow Redis: `DEBUG SLEEP 0.3` every 400 ms for 5 s while messages are published over
//    HTTP and delivered to WebSocket sessions. At the end every session received exactly
//    its user's published messages, in order (0 duplicates, 0 losses), no process died, and
//    the delay of the last messages is back to normal. The worst delay is printed.
//  - A partition, not a clean close: one worker runs in its own network namespace, joined
//    to the host by a veth pair (Redis listens on the host end too). Taking the host end
//    down drops that worker's packets silently (no RST, no FIN: its TCP retransmits into
//    nothing) for 8 s, longer than its lease (1 s) and than the command deadline (5 s),
//    while messages are published; then the link comes back. The other worker takes over,
//    the cut-off one comes back, and every session received exactly its messages.
//    (No iptables, nft or netem on the test machines: a veth end set down is the drop.)
//    Needs root (ip netns, ip link); skipped with a message otherwise.

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_chaos_redis_faults {

namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::deployment;
using pushonce::test::deployment_options;
using pushonce::test::environment;
using pushonce::test::hello_frame;
using pushonce::test::http_reply;
using pushonce::test::http_request;
using pushonce::test::observe_quiet;
using pushonce::test::pace;
using pushonce::test::process;
using pushonce::test::program_path;
using pushonce::test::redis_server;
using pushonce::test::redis_server_options;
using pushonce::test::sync_redis;
using pushonce::test::wait_for;
using pushonce::test::wait_until;
using pushonce::test::ws_client;
using kind = pushonce::test::deployment::kind;
using steady = std::chrono::steady_clock;

namespace {

constexpr const char* api_key = "faults-api-key";

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

json::object parse_object(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return !ec && v.is_object() ? v.as_object() : json::object{};
}

http_reply api_publish(std::uint16_t port, const std::string& body,
                       std::chrono::milliseconds timeout = 10s) {
  return http_request(
      "127.0.0.1", port, "POST", "/api/publish", body,
      {{"Authorization", std::string("Bearer ") + api_key}, {"Content-Type", "application/json"}},
      timeout);
}

deployment_options options_on(const redis_server& r, const std::string& ns) {
  deployment_options o;
  o.redis_url = r.url();
  o.redis_port = r.port();
  o.ns = ns;
  o.env = {{"PUSHONCE_API_KEY", std::string(api_key)}};
  return o;
}

void check_all_running(deployment& d) {
  for (auto k : {kind::leader, kind::worker, kind::gateway})
    for (auto* p : d.all(k)) CHECK_MESSAGE(p->running(), d.id_of(*p), " died\n", d.digest());
}

// One WebSocket session that keeps {epoch, offset} and resumes on a disconnect; records
// every message frame with the time it arrived.
struct received {
  long long offset = 0;
  std::string id;
  long long seq = -1;
  long long delay_ms = 0;  // arrival - publish time carried in data.t
};

class session {
 public:
  session(std::uint16_t port, std::string user) : port_(port), user_(std::move(user)) {}

  void run(const std::atomic<bool>& stop) {
    while (!stop.load()) {
      try {
        ws_client ws;
        ws.connect("127.0.0.1", port_);
        ws.send(epoch_.empty() ? hello_frame(user_) : hello_frame(user_, epoch_, offset_));
        while (!stop.load()) {
          auto f = ws.receive(200ms);
          if (!f) {
            if (ws.closed()) break;
            continue;
          }
          on_frame(*f);
        }
      } catch (const std::exception&) {
        ++reconnects;
        pace(100ms, "a reconnect after a refused connect");
      }
    }
  }

  std::vector<received> frames;  // read once the thread is joined
  std::atomic<std::size_t> count{0};
  std::atomic<int> welcomes{0};
  int reconnects = 0;
  int not_recovered = 0;

 private:
  void on_frame(const std::string& text) {
    auto o = parse_object(text);
    auto type = o.if_contains("type");
    if (type == nullptr || !type->is_string()) return;
    if (*type == "welcome") {
      if (auto r = o.if_contains("recovered"); r && *r == false && !epoch_.empty()) ++not_recovered;
      epoch_ = json::value_to<std::string>(o.at("epoch"));
      ++welcomes;
      return;
    }
    if (*type != "message") return;
    received m;
    m.offset = o.at("offset").to_number<long long>();
    m.id = json::value_to<std::string>(o.at("id"));
    if (auto d = o.if_contains("data"); d && d->is_object()) {
      const auto& data = d->as_object();
      if (auto s = data.if_contains("seq")) m.seq = s->to_number<long long>();
      if (auto t = data.if_contains("t")) m.delay_ms = wall_ms() - t->to_number<long long>();
    }
    offset_ = std::max(offset_, m.offset);
    frames.push_back(std::move(m));
    ++count;
  }

  std::uint16_t port_;
  std::string user_;
  std::string epoch_;
  long long offset_ = 0;
};

std::function<bool()> all_welcomed(const std::vector<std::unique_ptr<session>>& sessions) {
  return [&sessions] {
    return std::all_of(sessions.begin(), sessions.end(),
                       [](const auto& s) { return s->welcomes.load() > 0; });
  };
}

// Publishing has stopped: waits until the sessions hold every message `published` names
// (or 15 s pass), lets late duplicates arrive for a second, then stops the sessions.
// Returns how many messages were published.
template <class Published>
std::size_t drain_sessions(const Published& published,
                           std::vector<std::unique_ptr<session>>& sessions,
                           std::atomic<bool>& stop_sessions, std::vector<std::thread>& threads) {
  std::size_t expected = 0;
  for (auto& [u, m] : published) expected += m.size();
  wait_until(
      [&] {
        std::size_t n = 0;
        for (auto& s : sessions) n += s->count.load();
        return n >= expected;
      },
      15s, 200ms);
  observe_quiet(1s, "late duplicates");
  stop_sessions = true;
  for (auto& t : threads) t.join();
  return expected;
}

}  // namespace

TEST_CASE("redis faults: Redis refusing writes (OOM) turns /readyz 503 and publishes 503") {
  redis_server r;
  deployment d(options_on(r, "faults-oom"));
  d.start_leader();
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto port = d.port_of(gw);
  REQUIRE(wait_until(
      [&] { return http_request("127.0.0.1", port, "GET", "/readyz").status == 200; }, 10s, 50ms));

  ws_client alice;
  alice.connect("127.0.0.1", port);
  alice.send(hello_frame("alice"));
  auto welcome = alice.receive(5s);
  REQUIRE(welcome.has_value());
  REQUIRE(welcome->find("\"welcome\"") != std::string::npos);

  sync_redis admin(r.port());
  admin.cmd({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  admin.cmd({"CONFIG", "SET", "maxmemory", "1"});
  auto refused_at = steady::now();

  http_reply ready;
  REQUIRE(wait_until(
      [&] {
        ready = http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 2s);
        return ready.status == 503;
      },
      5s, 50ms));
  auto turned_ms = ms_since(refused_at);
  auto body = parse_object(ready.body);
  CHECK(body["ready"] == false);
  CHECK(body["redis"] == true);  // it answers, it refuses writes
  CHECK(body["writable"] == false);
  auto reason = body.contains("reason") ? json::value_to<std::string>(body["reason"]) : "";
  CHECK(reason.find("redis refuses writes") != std::string::npos);
  CHECK(reason.find("OOM") != std::string::npos);
  CHECK(ready.field("Retry-After") == "1");
  // Liveness is not readiness: the process is alive and Redis answers PING.
  CHECK(http_request("127.0.0.1", port, "GET", "/healthz").status == 200);

  const std::string msg = R"({"user":"alice","data":{"n":1},"id":"oom-1"})";
  auto t0 = steady::now();
  auto refused = api_publish(port, msg);
  auto publish_ms = ms_since(t0);
  CHECK_MESSAGE(refused.status == 503, refused.status, " ", refused.body, " ", refused.error);
  CHECK(parse_object(refused.body)["error"] == "unavailable");
  CHECK(refused.field("Retry-After") == "1");
  CHECK(publish_ms < 6000);  // within the command deadline (5 s)
  // A few more while it lasts: always 503, never a 500.
  for (int i = 0; i < 5; ++i) CHECK(api_publish(port, msg).status == 503);
  observe_quiet(2s, "a program exiting while heartbeats, claims and leases fail");
  check_all_running(d);

  admin.cmd({"CONFIG", "SET", "maxmemory", "0"});
  auto back_at = steady::now();
  REQUIRE(wait_until(
      [&] { return http_request("127.0.0.1", port, "GET", "/readyz").status == 200; }, 5s, 50ms));
  auto back_ms = ms_since(back_at);
  http_reply accepted;
  REQUIRE(wait_until(
      [&] {
        accepted = api_publish(port, msg);
        return accepted.status == 200;
      },
      10s, 200ms));
  auto id = json::value_to<std::string>(parse_object(accepted.body)["id"]);

  std::vector<std::string> got;
  for (auto& f : alice.drain(1500ms))
    if (f.find("\"type\":\"message\"") != std::string::npos) got.push_back(f);
  REQUIRE(got.size() == 1);
  CHECK(got[0].find("\"id\":\"" + id + "\"") != std::string::npos);
  CHECK(got[0].find("\"n\":1") != std::string::npos);
  CHECK(d.redis().inbox(d.inbox_key("alice")).size() == 1);
  check_all_running(d);
  fmt::print(
      "redis faults (OOM): /readyz 503 after {} ms, reason \"{}\"; publish 503 in {} ms; "
      "/readyz 200 again {} ms after maxmemory 0; delivered once (id {})\n",
      turned_ms, reason, publish_ms, back_ms, id);
}

TEST_CASE("redis faults: a slow Redis (DEBUG SLEEP 0.3 for 5 s) under traffic") {
  redis_server_options ro;
  ro.extra_args = {"--enable-debug-command", "yes"};
  redis_server r(ro);
  deployment d(options_on(r, "faults-slow"));
  d.start_leader();
  d.start_worker();
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto port = d.port_of(gw);

  constexpr int users = 20;
  constexpr int publishers = 4;
  constexpr auto run_for = 10s;
  constexpr auto slow_from = 2s;
  constexpr auto slow_for = 5s;

  std::atomic<bool> stop_sessions{false};
  std::vector<std::unique_ptr<session>> sessions;
  std::vector<std::thread> threads;
  for (int u = 0; u < users; ++u) {
    sessions.push_back(std::make_unique<session>(port, "s" + std::to_string(u)));
    threads.emplace_back([&, u] { sessions[u]->run(stop_sessions); });
  }
  wait_for("every session welcomed", all_welcomed(sessions), 10s);

  // Published: per user, seq -> id (the 200 answer), retried with the same key until accepted.
  std::mutex mu;
  std::map<std::string, std::map<long long, std::string>> published;
  std::atomic<long long> next_seq{0};
  std::atomic<int> server_errors{0}, unavailable{0}, slowest_publish_ms{0};
  std::atomic<bool> stop_publishing{false};
  auto start = steady::now();
  std::vector<std::thread> pubs;
  for (int p = 0; p < publishers; ++p) {
    pubs.emplace_back([&] {
      while (!stop_publishing.load()) {
        auto seq = next_seq++;
        auto user = "s" + std::to_string(seq % users);
        auto key = "slow-" + std::to_string(seq);
        for (;;) {
          auto body = fmt::format(R"({{"user":"{}","id":"{}","data":{{"seq":{},"t":{}}}}})", user,
                                  key, seq, wall_ms());
          auto t0 = steady::now();
          auto a = api_publish(port, body);
          auto took = static_cast<int>(ms_since(t0));
          int prev = slowest_publish_ms.load();
          while (took > prev && !slowest_publish_ms.compare_exchange_weak(prev, took)) {
          }
          if (a.status == 200) {
            std::lock_guard lock(mu);
            published[user][seq] = json::value_to<std::string>(parse_object(a.body)["id"]);
            break;
          }
          if (a.status >= 500 && a.status != 503) ++server_errors;
          if (a.status == 503) ++unavailable;
          pace(100ms, "a refused publish retried");
        }
        pace(40ms, "~25 publishes a second per publisher");
      }
    });
  }

  // The slow phase: Redis blocked 300 ms out of every 400 ms.
  int sleeps = 0;
  {
    sync_redis slow(r.port());
    pace(slow_from, "the load before the slow phase");
    auto until = steady::now() + slow_for;
    while (steady::now() < until) {
      slow.cmd({"DEBUG", "SLEEP", "0.3"});
      ++sleeps;
      pace(100ms, "Redis answering 100 ms between its 300 ms sleeps");
    }
  }
  auto slow_end_ms = ms_since(start);
  pace(run_for - slow_from - slow_for, "the load after the slow phase");
  stop_publishing = true;
  for (auto& t : pubs) t.join();

  const auto expected = drain_sessions(published, sessions, stop_sessions, threads);

  long long duplicates = 0, losses = 0, extras = 0, gaps = 0, worst = 0, reconnects = 0,
            not_recovered = 0;
  long long last_worst = 0;  // the messages published in the last second
  auto last_from = next_seq.load() - publishers * 25;
  for (int u = 0; u < users; ++u) {
    auto user = "s" + std::to_string(u);
    auto& s = *sessions[u];
    reconnects += s.reconnects;
    not_recovered += s.not_recovered;
    std::map<std::string, int> seen;
    long long prev = 0;
    for (auto& f : s.frames) {
      if (++seen[f.id] > 1) {
        ++duplicates;
        continue;
      }
      if (f.offset != prev + 1) ++gaps;
      prev = f.offset;
      worst = std::max(worst, f.delay_ms);
      if (f.seq >= last_from) last_worst = std::max(last_worst, f.delay_ms);
    }
    std::set<std::string> want;
    for (auto& [seq, id] : published[user]) want.insert(id);
    for (auto& id : want)
      if (!seen.contains(id)) ++losses;
    for (auto& [id, n] : seen)
      if (!want.contains(id)) ++extras;
  }
  CHECK(sleeps >= 10);
  CHECK(duplicates == 0);
  CHECK(losses == 0);
  CHECK(extras == 0);
  CHECK(gaps == 0);
  CHECK(not_recovered == 0);
  CHECK(server_errors == 0);
  CHECK(last_worst < 1000);  // delivery latency recovered after the slow phase
  check_all_running(d);
  fmt::print(
      "redis faults (slow): {} DEBUG SLEEP 0.3 over {} s (ended at {} ms); {} messages to {} "
      "sessions: duplicates {}; losses {}; gaps {}; reconnects {}; publish 503s {}, 5xx "
      "other {}; slowest publish {} ms; worst delivery delay {} ms; worst in the last second "
      "{} ms\n",
      sleeps, std::chrono::duration_cast<std::chrono::seconds>(slow_for).count(), slow_end_ms,
      expected, users, duplicates, losses, gaps, reconnects, unavailable.load(),
      server_errors.load(), slowest_publish_ms.load(), worst, last_worst);
  if (duplicates + losses + extras + gaps > 0) MESSAGE(d.digest());
}

namespace {

bool sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

// A network namespace joined to the host by a veth pair: HOST_ADDR on the host end,
// NS_ADDR inside. Removed on destruction.
struct netns_link {
  std::string ns, host_if, ns_if, host_addr, ns_addr;
  bool ok = false;

  netns_link() {
    auto n = static_cast<int>(::getpid() % 200) + 20;
    ns = fmt::format("pofaults{}", ::getpid());
    host_if = fmt::format("pofh{}", ::getpid() % 100000);
    ns_if = fmt::format("pofn{}", ::getpid() % 100000);
    host_addr = fmt::format("10.231.{}.1", n);
    ns_addr = fmt::format("10.231.{}.2", n);
    ok = sh("ip netns add " + ns) &&
         sh(fmt::format("ip link add {} type veth peer name {}", host_if, ns_if)) &&
         sh(fmt::format("ip link set {} netns {}", ns_if, ns)) &&
         sh(fmt::format("ip addr add {}/30 dev {}", host_addr, host_if)) &&
         sh(fmt::format("ip link set {} up", host_if)) &&
         sh(fmt::format("ip netns exec {} ip addr add {}/30 dev {}", ns, ns_addr, ns_if)) &&
         sh(fmt::format("ip netns exec {} ip link set {} up", ns, ns_if)) &&
         sh(fmt::format("ip netns exec {} ip link set lo up", ns));
  }
  ~netns_link() {
    sh("ip link del " + host_if);
    sh("ip netns del " + ns);
  }
  bool cut() { return sh(fmt::format("ip link set {} down", host_if)); }
  bool heal() {
    return sh(fmt::format("ip link set {} up", host_if)) &&
           sh(fmt::format("ip addr replace {}/30 dev {}", host_addr, host_if));
  }
};

}  // namespace

TEST_CASE("redis faults: a worker cut off from Redis (packets dropped) longer than its lease") {
  netns_link link;
  if (!link.ok) {
    MESSAGE("skipped: cannot create a network namespace and a veth pair (needs root)");
    return;
  }
  redis_server_options ro;
  ro.extra_args = {"--bind", "127.0.0.1", link.host_addr, "--protected-mode", "no"};
  redis_server r(ro);
  deployment d(options_on(r, "faults-part"));
  d.start_leader();
  d.start_worker({"--id", "w1", "--lease-ms", "1000"});
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto port = d.port_of(gw);

  // The worker in the namespace reaches Redis at the host end of the veth pair.
  environment env = d.env();
  std::erase_if(env, [](const auto& e) { return e.first == "PUSHONCE_REDIS"; });
  env.emplace_back("PUSHONCE_REDIS", fmt::format("redis://{}:{}", link.host_addr, r.port()));
  process cut_worker("ip",
                     {"netns", "exec", link.ns, program_path("pushonce-worker"), "--id", "wcut",
                      "--lease-ms", "1000"},
                     env);
  sync_redis look(r.port());
  auto heartbeat = d.key("worker:wcut");
  REQUIRE_MESSAGE(wait_until(
                      [&] {
                        return look.integer({"EXISTS", heartbeat}) == 1;
                      },
                      10s, 50ms),
                  cut_worker.stderr_text());

  constexpr int users = 10;
  std::atomic<bool> stop_sessions{false};
  std::vector<std::unique_ptr<session>> sessions;
  std::vector<std::thread> threads;
  for (int u = 0; u < users; ++u) {
    sessions.push_back(std::make_unique<session>(port, "p" + std::to_string(u)));
    threads.emplace_back([&, u] { sessions[u]->run(stop_sessions); });
  }
  wait_for("every session welcomed", all_welcomed(sessions), 10s);

  std::mutex mu;
  std::map<std::string, std::set<std::string>> published;
  std::atomic<long long> next_seq{0};
  std::atomic<int> server_errors{0};
  std::atomic<bool> stop_publishing{false};
  std::vector<std::thread> pubs;
  for (int p = 0; p < 4; ++p) {
    pubs.emplace_back([&] {
      while (!stop_publishing.load()) {
        auto seq = next_seq++;
        auto user = "p" + std::to_string(seq % users);
        auto body = fmt::format(R"({{"user":"{}","id":"part-{}","data":{{"seq":{},"t":{}}}}})",
                                user, seq, seq, wall_ms());
        for (;;) {
          auto a = api_publish(port, body);
          if (a.status == 200) {
            std::lock_guard lock(mu);
            published[user].insert(json::value_to<std::string>(parse_object(a.body)["id"]));
            break;
          }
          if (a.status >= 500 && a.status != 503) ++server_errors;
          pace(100ms, "a refused publish retried");
        }
        pace(40ms, "~25 publishes a second per publisher");
      }
    });
  }

  pace(3s, "the load before the cut");
  REQUIRE(link.cut());
  auto cut_at = steady::now();
  // Longer than the lease and the command deadline; the heartbeat key (3 s TTL) expires.
  bool heartbeat_gone = wait_until(
      [&] {
        return look.integer({"EXISTS", heartbeat}) == 0;
      },
      6s, 100ms);
  observe_quiet(
      std::chrono::duration_cast<std::chrono::milliseconds>(8s - (steady::now() - cut_at)),
      "the cut-off worker exiting within 8 s of the cut");
  bool alive_while_cut = cut_worker.running();
  REQUIRE(link.heal());
  auto healed_at = steady::now();
  bool back = wait_until([&] { return look.integer({"EXISTS", heartbeat}) == 1; }, 20s, 100ms);
  auto back_ms = ms_since(healed_at);
  pace(3s, "the load after the heal");
  stop_publishing = true;
  for (auto& t : pubs) t.join();

  const auto expected = drain_sessions(published, sessions, stop_sessions, threads);

  long long duplicates = 0, losses = 0, extras = 0, gaps = 0, worst = 0;
  for (int u = 0; u < users; ++u) {
    auto user = "p" + std::to_string(u);
    std::map<std::string, int> seen;
    long long prev = 0;
    for (auto& f : sessions[u]->frames) {
      if (++seen[f.id] > 1) {
        ++duplicates;
        continue;
      }
      if (f.offset != prev + 1) ++gaps;
      prev = f.offset;
      worst = std::max(worst, f.delay_ms);
    }
    for (auto& id : published[user])
      if (!seen.contains(id)) ++losses;
    for (auto& [id, n] : seen)
      if (!published[user].contains(id)) ++extras;
  }
  CHECK(heartbeat_gone);   // Redis stopped hearing from it
  CHECK(alive_while_cut);  // a partition, not a crash
  CHECK_MESSAGE(back, cut_worker.stderr_text());
  CHECK(duplicates == 0);
  CHECK(losses == 0);
  CHECK(extras == 0);
  CHECK(gaps == 0);
  CHECK(server_errors == 0);
  CHECK(cut_worker.running());
  check_all_running(d);
  auto redelivered = d.counter("redelivered");
  auto suppressed = d.counter("duplicates_suppressed");
  auto retention_exceeded = d.counter("retention_exceeded");
  auto dead_lettered = d.counter("dead_lettered");
  CHECK(retention_exceeded <= 0);
  CHECK(dead_lettered <= 0);
  fmt::print(
      "redis faults (partition): worker cut off for 8 s (lease 1 s); back {} ms after the "
      "link; {} messages to {} sessions: duplicates {}, losses {}, gaps {}; worst delivery "
      "delay {} ms; redelivered {}, duplicates_suppressed {}, retention_exceeded {}, "
      "dead_lettered {}\n",
      back_ms, expected, users, duplicates, losses, gaps, worst, redelivered, suppressed,
      retention_exceeded, dead_lettered);
  if (duplicates + losses + extras + gaps > 0) MESSAGE(d.digest(), cut_worker.stderr_text());
  auto said = cut_worker.stderr_text();
  fmt::print("the cut-off worker logged:\n{}\n", said.substr(0, 1500));
}

}  // namespace test_chaos_redis_faults
