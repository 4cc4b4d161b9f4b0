// bench_queue_slot_kill: exactly-once of queue assignments under load while the Redis
// Cluster master of the queue's slot ({q:default}) is killed again and again. The many-kill
// version of tests/e2e/test_cluster_queue_promotion.cpp.
//
// A private Redis Cluster of 3 masters with a replica each (cluster-node-timeout 2 s), the
// real programs on it: `pushonce-leader run --wait-replicas 1` (HS256 admission tokens
// through PUSHONCE_ADMISSION_SECRET), 2 workers, a gateway (--dev-auth). Users arrive so
// that about --buffer of them wait at any time; each has a WebSocket session (one
// io_context, this process) that joins the queue and resumes with its epoch and last offset
// after any close; once told its assignment it stays --linger-s and closes for good (the
// queue's abandon_after_s is 0: an absent holder keeps its resource). Resources are added
// with `pushonce-leader resource add` at --rate a second (at most 10 calls a second, each
// adding what is due by then; a refused call is not retried: it may have been applied).
// Every --kill-every-s the master then serving the slot is killed with kill -9; once its
// replica is promoted it is restarted on its port and directory (nodes.conf kept, no data),
// and rejoins as a replica of the promoted node, so the next kill has a replica to promote.
// A kill waits until the master has a replica in sync.
//
// After --duration-s: no more arrivals or resources; --settle-s for the workers' sweepers
// to re-drive what the leader held back, and until every outbox was swept; then every
// session is closed and every user opens one more, resuming where it stopped, to hear what
// reached its inbox since. From outside then:
//   duplicates     users who heard more than one assignment id, ids heard by two users,
//                  and an id heard twice within one epoch;
//   losses         users the queue's Redis state (NS:{q:default}:assigned) says hold a
//                  resource who were not told that resource, and users told an
//                  assignment they do not hold there;
//   held_by_nobody resources whose holder (NS:{q:default}:res:holder) was never told;
//   lost_tokens_live the admission tokens of assignments told but not held that
//                  `pushonce-leader admission verify` still calls live (and 5 held
//                  ones that must be: held_tokens_live).
// Latency: `resource add` call started -> the assignment frame of that resource. Recovery
// per kill: from the kill to the first frame of a resource whose add started after it.
// Prints one JSON line; exit 0 only when duplicates, losses and held_by_nobody are 0 and
// every kill went through (a failover or rejoin that did not happen is `trouble`).
//
//   bench_queue_slot_kill [--duration-s 180] [--kill-every-s 20] [--rate 200]
//                         [--buffer 1000] [--linger-s 10] [--settle-s 20]

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "core/use_tuple.hpp"
#include "tests/support/cluster_reads.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using pushonce::use_tuple;
using steady = std::chrono::steady_clock;
namespace t = pushonce::test;

const std::string queue = "default";
const steady::time_point bench_start = steady::now();

// Milliseconds since the program started (the one clock of every recorded time).
long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - bench_start).count();
}

struct options {
  long long duration_s = 180, kill_every_s = 20, rate = 200, buffer = 1000, linger_s = 10,
            settle_s = 20;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: %s needs a value\n", a.c_str());
      std::exit(2);
    }
    long long v = std::atoll(argv[++i]);
    if (a == "--duration-s")
      o.duration_s = std::max(1LL, v);
    else if (a == "--kill-every-s")
      o.kill_every_s = std::max(5LL, v);
    else if (a == "--rate")
      o.rate = std::max(10LL, v);
    else if (a == "--buffer")
      o.buffer = std::max(10LL, v);
    else if (a == "--linger-s")
      o.linger_s = std::max(0LL, v);
    else if (a == "--settle-s")
      o.settle_s = std::max(0LL, v);
    else {
      std::fprintf(stderr,
                   "usage: bench_queue_slot_kill [--duration-s S] [--kill-every-s S] [--rate N] "
                   "[--buffer N] [--linger-s S] [--settle-s S]\n");
      std::exit(2);
    }
  }
  return o;
}

double percentile(std::vector<long long> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))]);
}

// --- the sessions -----------------------------------------------------------------------------

struct frame_seen {
  std::string epoch, id, kind, resource, token;
  long long at_ms = 0;
  bool recheck = false;  // heard by the last session, after the load
};

// One open WebSocket connection and what its watchdogs need to know.
struct connection {
  explicit connection(asio::io_context& io) : ws(io) {}
  websocket::stream<tcp::socket> ws;
  bool welcomed = false, done = false;
  steady::time_point quiet_until;  // the re-check session closes once nothing came until then
  void close() {
    boost::system::error_code ec;
    ws.next_layer().close(ec);
  }
};

struct user_state {
  std::string name;
  std::string epoch;
  long long last = 0;  // the last offset heard in `epoch`
  bool joined = false, told = false, leaving = false;
  long long not_recovered = 0;
  std::vector<frame_seen> frames;
  std::shared_ptr<connection> conn;  // the open one, if any
};

struct load {
  options o;
  asio::io_context io;
  tcp::endpoint gateway;
  std::deque<user_state> users;  // io thread only (read by main after the io thread ended)
  std::atomic<long long> started{0}, joined{0}, told{0}, running{0}, reconnects{0},
      join_refusals{0}, rechecks_left{0}, rechecked{0};
  std::atomic<bool> arriving{true};
  bool closing = false;  // io thread

  // Closes `c` when it has no welcome after `d`.
  asio::awaitable<void> welcome_deadline(std::shared_ptr<connection> c,
                                         std::chrono::milliseconds d) {
    asio::steady_timer timer(io, d);
    co_await timer.async_wait(use_tuple);
    if (!c->done && !c->welcomed) c->close();
  }

  // A told user's session stays --linger-s, then closes for good.
  asio::awaitable<void> leave_after(user_state& u) {
    asio::steady_timer timer(io, std::chrono::seconds(o.linger_s));
    co_await timer.async_wait(use_tuple);
    u.leaving = true;
    if (u.conn) u.conn->close();
  }

  // The re-check session's watchdog: closes once nothing came for a while.
  asio::awaitable<void> close_when_quiet(std::shared_ptr<connection> c) {
    asio::steady_timer timer(io);
    while (!c->done) {
      if (steady::now() >= c->quiet_until) {
        c->close();
        co_return;
      }
      timer.expires_at(std::min(c->quiet_until, steady::now() + 50ms));
      co_await timer.async_wait(use_tuple);
    }
  }

  asio::awaitable<void> pause(std::chrono::milliseconds d) {
    asio::steady_timer timer(io, d);
    co_await timer.async_wait(use_tuple);
  }

  // What a frame says, for the user; false when the connection should be dropped (a join
  // refused: it is tried again on a new connection, as the browser client does).
  bool on_frame(user_state& u, connection& c, const std::string& f, bool recheck) {
    if (f.find(R"("type":"position")") != std::string::npos) return true;
    boost::system::error_code ec;
    auto v = json::parse(f, ec);
    if (ec || !v.is_object()) return true;
    const auto& obj = v.as_object();
    const auto type = t::str_field(obj, "type");
    if (type == "welcome") {
      c.welcomed = true;
      auto rec = obj.find("recovered");
      bool recovered = rec != obj.end() && rec->value().is_bool() && rec->value().as_bool();
      auto epoch = t::str_field(obj, "epoch");
      if (!recovered || epoch != u.epoch) u.last = 0;
      if (!recovered && !u.epoch.empty()) ++u.not_recovered;
      u.epoch = epoch;
      return true;
    }
    if (type == "joined" || (type == "error" && t::str_field(obj, "op") == "join" &&
                             t::str_field(obj, "code") == "conflict")) {
      if (!u.joined) ++joined;
      u.joined = true;
      return true;
    }
    if (type == "error" && t::str_field(obj, "op") == "join") {
      ++join_refusals;
      return false;
    }
    if (type != "message") return true;
    frame_seen s;
    s.epoch = u.epoch;
    s.id = t::str_field(obj, "id");
    s.kind = t::str_field(obj, "kind");
    s.at_ms = now_ms();
    s.recheck = recheck;
    auto data = obj.find("data");
    if (data != obj.end() && data->value().is_object()) {
      s.resource = t::str_field(data->value().as_object(), "resource");
      s.token = t::str_field(data->value().as_object(), "admission");
    }
    u.last = std::max(u.last, t::int_field(obj, "offset"));
    if (s.kind == "assignment" && !u.told && !recheck) {
      u.told = true;
      ++told;
      asio::co_spawn(io, leave_after(u), asio::detached);
    }
    u.frames.push_back(std::move(s));
    return true;
  }

  // One connection: connect, hello (resuming when an epoch is known), join until joined,
  // then frames until it closes. `recheck`: no join, closes once quiet.
  asio::awaitable<std::shared_ptr<connection>> connect_once(user_state& u, bool recheck) {
    auto c = std::make_shared<connection>(io);
    u.conn = c;
    auto& sock = c->ws.next_layer();
    auto [cec] = co_await sock.async_connect(gateway, use_tuple);
    if (cec) co_return c;
    auto [hec] = co_await c->ws.async_handshake("127.0.0.1", "/ws", use_tuple);
    if (hec) co_return c;
    c->ws.text(true);
    const auto hello =
        u.epoch.empty() ? t::hello_frame(u.name) : t::hello_frame(u.name, u.epoch, u.last);
    auto [wec, wn] = co_await c->ws.async_write(asio::buffer(hello), use_tuple);
    if (wec) co_return c;
    if (recheck) {
      c->quiet_until = steady::now() + 5s;
      asio::co_spawn(io, close_when_quiet(c), asio::detached);
    } else {
      asio::co_spawn(io, welcome_deadline(c, 8s), asio::detached);
    }
    beast::flat_buffer buf;
    bool join_sent = false;
    for (;;) {
      auto [rec, n] = co_await c->ws.async_read(buf, use_tuple);
      if (rec) break;
      auto f = beast::buffers_to_string(buf.data());
      buf.consume(n);
      if (!on_frame(u, *c, f, recheck)) break;
      if (recheck && c->welcomed) c->quiet_until = steady::now() + 400ms;
      if (!recheck && c->welcomed && !u.joined && !join_sent) {
        join_sent = true;
        const std::string join = R"({"op":"join","queue":")" + queue + "\"}";
        auto [jec, jn] = co_await c->ws.async_write(asio::buffer(join), use_tuple);
        if (jec) break;
      }
    }
    c->done = true;
    c->close();
    co_return c;
  }

  asio::awaitable<void> run_user(user_state& u) {
    while (!closing && !u.leaving) {
      auto c = co_await connect_once(u, false);
      u.conn.reset();
      if (u.leaving || closing) break;
      ++reconnects;
      co_await pause(c->welcomed ? 100ms : 500ms);
    }
    --running;
  }

  void spawn_user() {
    users.emplace_back();
    auto& u = users.back();
    u.name = fmt::format("k{}", users.size() - 1);
    ++started;
    ++running;
    asio::co_spawn(io, run_user(u), asio::detached);
  }

  // Arrivals: keep about --buffer users started and not yet told.
  asio::awaitable<void> arrivals() {
    while (arriving) {
      while (started - told < o.buffer) spawn_user();
      co_await pause(50ms);
    }
  }

  // Closes every session for good (posted to the io thread).
  void close_all() {
    closing = true;
    for (auto& u : users)
      if (u.conn) u.conn->close();
  }

  // One more session per user, resuming where it stopped; 400 at a time.
  asio::awaitable<void> recheck_worker(std::size_t first, std::size_t step) {
    for (std::size_t i = first; i < users.size(); i += step) {
      for (int attempt = 0; attempt < 5; ++attempt) {
        auto c = co_await connect_once(users[i], true);
        users[i].conn.reset();
        if (c->welcomed) {
          ++rechecked;
          break;
        }
        co_await pause(200ms);
      }
      --rechecks_left;
    }
  }
};

// --- the cluster ----------------------------------------------------------------------------

std::string info_of(std::uint16_t port) {
  try {
    t::sync_redis r(port);
    return r.text({"INFO", "replication"});
  } catch (const std::exception&) {
    return {};
  }
}

// The master on `port` has a replica whose sync is done (state=online).
bool has_online_replica(std::uint16_t port) {
  return info_of(port).find("state=online") != std::string::npos;
}

// The node on `port` is a replica whose link to its master is up.
bool is_synced_replica(std::uint16_t port) {
  auto info = info_of(port);
  return info.find("role:slave") != std::string::npos &&
         info.find("master_link_status:up") != std::string::npos;
}

std::string json_list(const std::vector<long long>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  return out + "]";
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  auto say = [](const std::string& s) {
    std::fprintf(stderr, "[%7.1f s] %s\n", static_cast<double>(now_ms()) / 1000, s.c_str());
  };

  t::redis_cluster_options co;
  co.replicas = 1;
  co.node_timeout = 2000ms;
  t::redis_cluster cluster(co);
  const std::string ns = t::unique_namespace("bench", "qkill");
  const pushonce::keys k(ns, 16);  // the cluster default of --bus-shards
  const t::environment env = cluster.program_env(
      ns, {{"PUSHONCE_ADMISSION_SECRET", "bench-queue-slot-kill-0123456789abcdef"},
           {"PUSHONCE_LOG_LEVEL", "warn"}});
  t::process leader(t::program_path("pushonce-leader"),
                    {"run", "--id", "l1", "--wait-replicas", "1"}, env);
  t::process w1(t::program_path("pushonce-worker"), {"--id", "w1"}, env);
  t::process w2(t::program_path("pushonce-worker"), {"--id", "w2"}, env);
  const auto port = t::free_port();
  t::process gateway(t::program_path("pushonce-gateway"),
                     {"--id", "g1", "--dev-auth", "--listen", "127.0.0.1:" + std::to_string(port)},
                     env);
  auto logs = [&] {
    auto tail = [](std::string s) { return s.substr(s.size() > 3000 ? s.size() - 3000 : 0); };
    return "leader: " + tail(leader.stderr_text()) + "\nw1: " + tail(w1.stderr_text()) +
           "\nw2: " + tail(w2.stderr_text()) + "\ngateway: " + tail(gateway.stderr_text());
  };
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "error: %s\n%s\n", why.c_str(), logs().c_str());
    return 1;
  };
  if (!t::wait_until(
          [&] {
            return t::http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 2s).status == 200;
          },
          30s, 100ms))
    return fail("the gateway is not ready");
  const auto registered = k.queue(queue, "registered");
  if (!t::wait_until(
          [&] {
            t::sync_redis r(cluster.master_of(cluster.slot_of(registered)));
            return r.integer({"EXISTS", registered}) == 1;
          },
          30s, 100ms))
    return fail("the leader did not register the queue");
  // Users close for good once told: no abandonment of their assignments while they are away.
  auto set = t::run_cli("pushonce-leader", {"settings", "--abandon-after", "0"}, env, 20s);
  if (set.code() != 0) return fail("settings: " + set.describe());
  const unsigned slot = cluster.slot_of(k.queue(queue, "outbox"));

  // The sessions, on their own thread.
  load l;
  l.o = o;
  l.gateway = tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), port);
  auto work = asio::make_work_guard(l.io);
  std::thread io_thread([&] { l.io.run(); });
  asio::co_spawn(l.io, l.arrivals(), asio::detached);
  if (!t::wait_until([&] { return l.joined >= o.buffer * 9 / 10; }, 120s, 100ms)) {
    l.io.stop();
    io_thread.join();
    return fail(fmt::format("only {} of {} users joined", l.joined.load(), o.buffer));
  }
  say(fmt::format("{} users joined; load starts", l.joined.load()));

  // The resources: --rate a second, in 10 calls a second.
  std::mutex add_m;
  std::vector<long long> added_at;  // resource r<N>: when its add call started
  std::atomic<bool> adding{true};
  std::atomic<long long> add_calls{0}, add_failures{0};
  const long long load_start = now_ms();
  std::thread adder([&] {
    auto tick = steady::now();
    while (adding) {
      std::vector<std::string> args{"resource", "add"};
      {
        std::lock_guard lock(add_m);
        const auto at = now_ms();
        // What is due by now: a call that took long makes the next one larger.
        const long long due = (at - load_start) * o.rate / 1000 + o.rate / 10;
        const long long n = std::min(o.rate, due - static_cast<long long>(added_at.size()));
        for (long long i = 0; i < n; ++i) {
          args.push_back(fmt::format("r{}", added_at.size()));
          added_at.push_back(at);
        }
      }
      args.push_back("--json");
      if (args.size() > 3) {
        auto r = t::run_cli("pushonce-leader", args, env, 10s);
        ++add_calls;
        if (r.code() != 0) ++add_failures;
      }
      tick += 100ms;
      std::this_thread::sleep_until(std::max(tick, steady::now()));
    }
  });

  // The kills.
  std::vector<long long> kill_at, promote_ms, rejoin_ms;
  long long kills_skipped = 0;
  std::string trouble;
  for (long long n = 1;; ++n) {
    const long long due = load_start + n * o.kill_every_s * 1000;
    if (due >= load_start + o.duration_s * 1000) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(0LL, due - now_ms())));
    std::uint16_t victim = 0;
    if (!t::wait_until(
            [&] {
              try {
                victim = cluster.master_of(slot);
                return victim != 0 && has_online_replica(victim);
              } catch (const std::exception&) {
                return false;
              }
            },
            30s, 200ms)) {
      ++kills_skipped;
      say(fmt::format("kill {} skipped: the master of slot {} has no replica in sync", n, slot));
      continue;
    }
    const auto at = now_ms();
    std::uint16_t promoted = 0;
    try {
      promoted = cluster.fail_master_of(slot);
    } catch (const std::exception& e) {
      trouble = fmt::format("kill {}: {}", n, e.what());
      say(trouble);
      break;
    }
    kill_at.push_back(at);
    promote_ms.push_back(now_ms() - at);
    auto& node = cluster.node_on(victim);
    try {
      node.restart();
    } catch (const std::exception& e) {
      trouble = fmt::format("kill {}: restart of {}: {}", n, victim, e.what());
      say(trouble);
      break;
    }
    if (!t::wait_until([&] { return is_synced_replica(victim); }, 30s, 100ms)) {
      trouble = fmt::format("kill {}: {} did not rejoin as a replica in 30 s: {}", n, victim,
                            info_of(victim));
      say(trouble);
      break;
    }
    rejoin_ms.push_back(now_ms() - at);
    say(fmt::format(
        "kill {}: master {} killed, {} promoted after {} ms, {} a synced replica "
        "after {} ms; {} told so far",
        n, victim, promoted, promote_ms.back(), victim, rejoin_ms.back(), l.told.load()));
  }
  if (trouble.empty())
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::max(0LL, load_start + o.duration_s * 1000 - now_ms())));
  adding = false;
  adder.join();
  l.arriving = false;
  const long long load_end = now_ms();
  say(fmt::format("load over: {} told, {} add calls ({} refused)", l.told.load(), add_calls.load(),
                  add_failures.load()));

  // Settle: the sweepers re-drive what was held back; every outbox swept.
  std::this_thread::sleep_for(std::chrono::seconds(o.settle_s));
  auto swept = [&] { return t::outboxes_swept(cluster, k, queue); };
  const bool quiet = t::wait_until(swept, 90s, 200ms);
  say(fmt::format("settled (outboxes swept: {}); closing the sessions", quiet));
  asio::post(l.io, [&] { l.close_all(); });
  t::wait_until([&] { return l.running == 0; }, 60s, 50ms);
  // Re-check: every user resumes once more and hears what reached its inbox since.
  std::atomic<bool> recheck_begun{false};
  asio::post(l.io, [&] {
    l.rechecks_left = static_cast<long long>(l.users.size());
    recheck_begun = true;
    for (std::size_t w = 0; w < 400; ++w)
      asio::co_spawn(l.io, l.recheck_worker(w, 400), asio::detached);
  });
  t::wait_until([&] { return recheck_begun && l.rechecks_left == 0; }, 600s, 100ms);
  say(fmt::format("re-checked {} users", l.users.size()));
  work.reset();
  l.io.stop();
  io_thread.join();

  // --- the checks ----------------------------------------------------------------------------
  cluster.wait_ok(30s);
  const auto holders = t::hash_of(cluster, k.queue(queue, "res:holder"));  // resource -> user
  const auto assigned = t::hash_of(cluster, k.queue(queue, "assigned"));   // user -> resource
  std::vector<std::string> problems;
  auto note = [&](std::string p) {
    if (problems.size() < 20) problems.push_back(std::move(p));
  };
  std::map<std::string, std::string> owner_of_id;
  std::set<std::string> told;
  std::map<std::string, std::set<std::string>> resources_heard;  // user -> resources told
  long long several = 0, within_epoch = 0, shared_ids = 0, other_kinds = 0, told_not_held = 0,
            held_not_told = 0, held_by_nobody = 0, not_recovered = 0, heard_in_recheck = 0;
  std::vector<long long> latency, first_frame_at;  // per told user
  std::vector<long long> first_frame_added;        // the add time of that frame's resource
  std::vector<std::string> lost_tokens, held_tokens;
  for (const auto& u : l.users) {
    not_recovered += u.not_recovered;
    std::set<std::pair<std::string, std::string>> seen;
    std::map<std::string, const frame_seen*> by_id;
    const frame_seen* first = nullptr;
    for (const auto& f : u.frames) {
      if (f.kind != "assignment") {
        ++other_kinds;
        note(fmt::format("{}: a {} message, id {}", u.name, f.kind, f.id));
        continue;
      }
      if (f.recheck) ++heard_in_recheck;
      if (!seen.insert({f.epoch, f.id}).second) {
        ++within_epoch;
        note(fmt::format("{}: id {} twice in epoch {}", u.name, f.id, f.epoch));
      }
      if (!by_id.count(f.id)) by_id[f.id] = &f;
      if (!first) first = &f;
    }
    if (by_id.empty()) continue;
    if (by_id.size() > 1) {
      ++several;
      std::string all;
      for (const auto& [id, f] : by_id) all += fmt::format(" {}={}", id, f->resource);
      note(fmt::format("{}: {} assignment ids:{}", u.name, by_id.size(), all));
    }
    told.insert(u.name);
    for (const auto& [id, f] : by_id) resources_heard[u.name].insert(f->resource);
    for (const auto& [id, f] : by_id) {
      auto [it, fresh] = owner_of_id.emplace(id, u.name);
      if (!fresh) {
        ++shared_ids;
        note(fmt::format("id {} told to {} and {}", id, it->second, u.name));
      }
      auto h = holders.find(f->resource);
      auto a = assigned.find(u.name);
      const bool held = h != holders.end() && h->second == u.name && a != assigned.end() &&
                        a->second == f->resource;
      if (!held) {
        ++told_not_held;
        if (!f->token.empty()) lost_tokens.push_back(f->token);
        note(fmt::format("{}: told id {} for {}, whose holder in Redis is {}; the user holds {}",
                         u.name, id, f->resource, h == holders.end() ? "none" : h->second,
                         a == assigned.end() ? "nothing" : a->second));
      } else if (held_tokens.size() < 5 && !f->token.empty()) {
        held_tokens.push_back(f->token);
      }
    }
    if (first->resource.size() > 1 && first->resource[0] == 'r') {
      const auto n = std::strtoull(first->resource.c_str() + 1, nullptr, 10);
      std::lock_guard lock(add_m);
      if (n < added_at.size()) {
        latency.push_back(first->at_ms - added_at[n]);
        first_frame_at.push_back(first->at_ms);
        first_frame_added.push_back(added_at[n]);
      }
    }
  }
  for (const auto& [user, resource] : assigned) {
    auto h = resources_heard.find(user);
    if (h == resources_heard.end() || !h->second.count(resource)) {
      ++held_not_told;
      note(fmt::format("{} holds {} in Redis and was never told", user, resource));
    }
  }
  for (const auto& [resource, user] : holders)
    if (!told.count(user)) {
      ++held_by_nobody;
      note(fmt::format("{} held by {}, who never heard of it", resource, user));
    }
  // The tokens: those of assignments not held must not verify as live; a few held ones must.
  long long lost_tokens_live = 0, held_tokens_live = 0;
  auto live = [&](const std::string& token) {
    auto r = t::run_cli("pushonce-leader", {"admission", "verify", token, "--json"}, env, 20s);
    if (r.code() != 0 || !r.out.is_object()) return false;
    const auto state = t::str_field(r.out.as_object(), "state");
    return state == "assigned" || state == "accepted";
  };
  for (const auto& tok : lost_tokens) lost_tokens_live += live(tok);
  for (const auto& tok : held_tokens) held_tokens_live += live(tok);

  const long long duplicates = several + shared_ids + within_epoch;
  const long long losses = held_not_told + told_not_held;
  long long in_window = 0;
  for (auto at : first_frame_at) in_window += at >= load_start && at <= load_end;
  std::vector<long long> recovery;
  for (auto k_at : kill_at) {
    long long best = -1;
    for (std::size_t i = 0; i < first_frame_at.size(); ++i)
      if (first_frame_added[i] >= k_at && (best < 0 || first_frame_at[i] - k_at < best))
        best = first_frame_at[i] - k_at;
    recovery.push_back(best);
  }
  const bool never_recovered = std::find(recovery.begin(), recovery.end(), -1) != recovery.end();
  const long long recovery_max =
      recovery.empty()
          ? -1
          : (never_recovered ? -1 : *std::max_element(recovery.begin(), recovery.end()));
  auto max_of = [](const std::vector<long long>& v) {
    return v.empty() ? -1 : *std::max_element(v.begin(), v.end());
  };
  const bool programs_up = leader.running() && w1.running() && w2.running() && gateway.running();
  std::printf(
      "%s\n",
      fmt::format(
          R"({{"duration_s":{},"kill_every_s":{},"offered_per_s":{},"kills":{},"kills_skipped":{},)"
          R"("assignments":{},"held_in_redis":{},"assignments_per_s":{:.1f},"duplicates":{},)"
          R"("losses":{},"held_by_nobody":{},"users_with_several_ids":{},"ids_shared":{},)"
          R"("twice_in_an_epoch":{},"held_not_told":{},"told_not_held":{},"other_kinds":{},)"
          R"("heard_only_at_recheck":{},"lost_tokens_live":{},"held_tokens_live":"{}/{}",)"
          R"("latency_ms_p50":{},"latency_ms_p99":{},"latency_ms_max":{},)"
          R"("recovery_ms_max":{},"recovery_ms":{},"promote_ms_max":{},"rejoin_ms_max":{},)"
          R"("users":{},"rechecked":{},"join_refusals":{},"reconnects":{},"recovered_false":{},)"
          R"("add_calls":{},"add_refused":{},"swept":{},"programs_up":{},"trouble":{}}})",
          o.duration_s, o.kill_every_s, o.rate, kill_at.size(), kills_skipped, told.size(),
          holders.size(),
          static_cast<double>(in_window) * 1000.0 /
              static_cast<double>(std::max(1LL, load_end - load_start)),
          duplicates, losses, held_by_nobody, several, shared_ids, within_epoch, held_not_told,
          told_not_held, other_kinds, heard_in_recheck, lost_tokens_live, held_tokens_live,
          held_tokens.size(), percentile(latency, 0.5), percentile(latency, 0.99),
          percentile(latency, 1.0), recovery_max, json_list(recovery), max_of(promote_ms),
          max_of(rejoin_ms), l.users.size(), l.rechecked.load(), l.join_refusals.load(),
          l.reconnects.load(), not_recovered, add_calls.load(), add_failures.load(), quiet,
          programs_up, json::serialize(json::value(trouble)))
          .c_str());
  for (const auto& p : problems) std::fprintf(stderr, "problem: %s\n", p.c_str());
  if (!programs_up) std::fprintf(stderr, "%s\n", logs().c_str());
  return duplicates == 0 && losses == 0 && held_by_nobody == 0 && trouble.empty() ? 0 : 1;
}
