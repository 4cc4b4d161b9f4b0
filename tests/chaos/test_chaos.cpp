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
// second. PUSHONCE_KEEP_TEST_DIRS keeps the processes' logs.

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/keys.hpp"
#include "core/message.hpp"
#include "core/publisher.hpp"
#include "core/queue_api.hpp"
#include "core/redis/connection.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/ws_client.hpp"

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::hello_frame;
using pushonce::test::int_field;
using pushonce::test::parse_or_null;
using pushonce::test::process;
using pushonce::test::redis_server;
using pushonce::test::reply_ptr;
using pushonce::test::str_field;
using pushonce::test::ws_client;
using steady = std::chrono::steady_clock;

namespace {

constexpr const char* ns = "chaos";
constexpr const char* queue_name = "default";
constexpr int user_count = 200;
constexpr int resource_count = 20;
constexpr int worker_count = 5;
constexpr int gateway_count = 2;
constexpr auto release_every = 40ms;  // ~25 assignments/s

long long env_or(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  long long n = std::atoll(v);
  return n > 0 ? n : fallback;
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

std::string user_name(int i) {
  return "u" + std::to_string(i);
}

// --- a synchronous look at Redis (hiredis), reconnecting: Redis restarts under it --------

using words = std::vector<std::string>;

class probe {
 public:
  explicit probe(std::uint16_t port) : port_(port) {}
  ~probe() { drop(); }
  probe(const probe&) = delete;
  probe& operator=(const probe&) = delete;

  /// The replies of several commands sent as one pipeline; throws when Redis does not
  /// answer (after one reconnect).
  std::vector<reply_ptr> pipeline(const std::vector<words>& cmds) {
    for (int attempt = 0;; ++attempt) {
      try {
        return try_pipeline(cmds);
      } catch (const std::exception&) {
        drop();
        if (attempt >= 1) throw;
      }
    }
  }
  reply_ptr cmd(const words& w) { return std::move(pipeline({w}).front()); }
  long long integer(const words& w) {
    auto r = cmd(w);
    if (r->type != REDIS_REPLY_INTEGER) throw std::runtime_error("redis: not an integer reply");
    return r->integer;
  }
  std::optional<std::string> string(const words& w) {
    auto r = cmd(w);
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
      return std::string(r->str, r->len);
    return std::nullopt;
  }

 private:
  void drop() {
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
  }
  std::vector<reply_ptr> try_pipeline(const std::vector<words>& cmds) {
    if (!ctx_) {
      timeval tv{5, 0};
      ctx_ = redisConnectWithTimeout("127.0.0.1", port_, tv);
      if (ctx_ == nullptr || ctx_->err) throw std::runtime_error("redis: cannot connect");
      redisSetTimeout(ctx_, tv);
    }
    for (const auto& w : cmds) {
      std::vector<const char*> argv;
      std::vector<size_t> lens;
      for (const auto& a : w) {
        argv.push_back(a.data());
        lens.push_back(a.size());
      }
      redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data());
    }
    std::vector<reply_ptr> out;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      void* r = nullptr;
      if (redisGetReply(ctx_, &r) != REDIS_OK || r == nullptr)
        throw std::runtime_error("redis: no reply");
      out.emplace_back(static_cast<redisReply*>(r));
    }
    return out;
  }

  std::uint16_t port_;
  redisContext* ctx_ = nullptr;
};

struct stream_entry {
  std::string entry_id;
  std::map<std::string, std::string> fields;
};

std::vector<stream_entry> entries_of(const redisReply* r) {
  std::vector<stream_entry> out;
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return out;
  out.reserve(r->elements);
  for (size_t i = 0; i < r->elements; ++i) {
    const auto* e = r->element[i];
    stream_entry se;
    se.entry_id.assign(e->element[0]->str, e->element[0]->len);
    const auto* f = e->element[1];
    for (size_t j = 0; j + 1 < f->elements; j += 2)
      se.fields.emplace(std::string(f->element[j]->str, f->element[j]->len),
                        std::string(f->element[j + 1]->str, f->element[j + 1]->len));
    out.push_back(std::move(se));
  }
  return out;
}

// Every entry of a stream, read in pages.
std::vector<stream_entry> read_stream(probe& p, const std::string& key) {
  std::vector<stream_entry> all;
  std::string from = "-";
  for (;;) {
    auto r = p.cmd({"XRANGE", key, from, "+", "COUNT", "5000"});
    auto page = entries_of(r.get());
    if (page.empty()) break;
    from = "(" + page.back().entry_id;
    bool last = page.size() < 5000;
    for (auto& e : page) all.push_back(std::move(e));
    if (last) break;
  }
  return all;
}

// --- the processes ----------------------------------------------------------------------

// The slots of the deployment: a restarted process takes its slot (the killed one stays in
// the deployment for its logs).
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
    workers[slot] = &d.start_worker({"--id", id, "--lease-ms", "1000"});
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

// --- one browser session per user -------------------------------------------------------

struct session_state {
  std::string user;
  int gateway = 0;  // the gateway it connects to first
  std::string epoch;
  std::atomic<long long> last_offset{0};
  std::atomic<bool> welcomed{false};
  // Written by the session's thread only; read by the main thread after it joined.
  std::vector<std::pair<std::string, long long>> frames;  // (id, offset) in arrival order
  std::vector<long long> latency_ms;                      // receive time - ts, per frame
  long long connects = 0, not_recovered = 0, welcome_failures = 0, offset_dups = 0, offset_gaps = 0,
            protocol_errors = 0;
  std::vector<std::string> problems;  // the first few, for failure messages

  void note(std::string what) {
    if (problems.size() < 5) problems.push_back(std::move(what));
  }
};

void run_session(session_state& s, const std::vector<std::uint16_t>& ports,
                 const std::atomic<bool>& stop) {
  auto backoff = 50ms;
  while (!stop) {
    ws_client ws;
    bool connected = false;
    // Its own gateway first; when that one is down, the other.
    for (int k = 0; k < gateway_count && !connected; ++k) {
      int g = (s.gateway + k) % gateway_count;
      try {
        ws.connect("127.0.0.1", ports[static_cast<std::size_t>(g)], "/ws", {}, 2s);
        s.gateway = g;
        connected = true;
      } catch (const std::exception&) {
      }
    }
    auto retry_later = [&] {
      std::this_thread::sleep_for(backoff);
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, 500ms);
    };
    if (!connected) {
      retry_later();
      continue;
    }
    std::string hello =
        s.epoch.empty() ? hello_frame(s.user) : hello_frame(s.user, s.epoch, s.last_offset.load());
    if (!ws.send(hello, 2s)) {
      retry_later();
      continue;
    }
    auto w = ws.receive(8s);
    if (!w) {
      // Closed (e.g. 1013 while Redis is away) or no answer: try again.
      if (!ws.closed()) {
        ++s.welcome_failures;
        s.note("no welcome within 8 s");
      }
      retry_later();
      continue;
    }
    auto v = parse_or_null(*w);
    if (!v.is_object() || str_field(v.as_object(), "type") != "welcome") {
      ++s.protocol_errors;
      s.note("first frame is not a welcome: " + *w);
      retry_later();
      continue;
    }
    const auto& wo = v.as_object();
    auto rec = wo.find("recovered");
    bool recovered = rec != wo.end() && rec->value().is_bool() && rec->value().as_bool();
    if (s.epoch.empty()) {
      s.epoch = str_field(wo, "epoch");
    } else if (!recovered || str_field(wo, "epoch") != s.epoch) {
      ++s.not_recovered;
      s.note(fmt::format("resume at offset {} not honoured: {}", s.last_offset.load(), *w));
    }
    ++s.connects;
    s.welcomed = true;
    backoff = 50ms;
    while (!stop) {
      auto f = ws.receive(200ms);
      if (!f) {
        if (ws.closed()) break;
        continue;
      }
      long long received = now_ms();
      auto fv = parse_or_null(*f);
      if (!fv.is_object()) {
        ++s.protocol_errors;
        s.note("not JSON: " + *f);
        continue;
      }
      const auto& fo = fv.as_object();
      auto type = str_field(fo, "type");
      if (type != "message") {
        if (type == "error") {
          ++s.protocol_errors;
          s.note("error frame: " + *f);
        }
        continue;  // state frames (position) carry no offset
      }
      auto id = str_field(fo, "id");
      long long off = int_field(fo, "offset");
      long long last = s.last_offset.load();
      if (off <= last) {
        ++s.offset_dups;
        s.note(fmt::format("offset {} after {} (id {})", off, last, id));
      } else if (off != last + 1) {
        ++s.offset_gaps;
        s.note(fmt::format("offset {} after {} (id {})", off, last, id));
      }
      s.frames.emplace_back(id, off);
      if (long long ts = int_field(fo, "ts"); ts > 0) s.latency_ms.push_back(received - ts);
      if (off > last) s.last_offset = off;
    }
    if (stop) ws.close();
  }
}

// --- the load: custom publishes and assignments (one io_context, one thread) -------------

struct custom_message {
  std::string user, key, data;
  std::string id;  // once accepted
  bool duplicate = false;
  int attempts = 0;
};

struct load_result {
  std::vector<custom_message> custom;
  long long publish_failures = 0;      // failed attempts (retried with the same key)
  long long retried_duplicates = 0;    // a retry answered "duplicate": the first try had landed
  long long first_try_duplicates = 0;  // must be 0: every key is new
  long long unaccepted = 0;            // messages never accepted (must be 0)
  long long releases_ok = 0, releases_ambiguous = 0, releases_refused = 0;
  long long joins = 0, join_failures = 0;
  std::atomic<bool> done{false};
};

class load_driver {
 public:
  load_driver(std::string redis_url, std::chrono::seconds duration, long long rate,
              load_result& out)
      : duration_(duration), rate_(rate), out_(out) {
    pushonce::redis::connection_options co;
    co.where = pushonce::redis::endpoint::parse(redis_url);
    co.client_name = "chaos-load";
    conn_ = pushonce::redis::connection::create(io_.get_executor(), co);
    // Nothing trimmed before the checks read the outboxes back (see checker_env()).
    pushonce::publisher_options po;
    po.retention = {std::chrono::minutes(10), std::chrono::minutes(10)};
    pub_ = std::make_unique<pushonce::publisher>(conn_, pushonce::keys(ns), po);
    queues_ = std::make_unique<pushonce::queue_api>(conn_, pushonce::keys(ns));
  }

  ~load_driver() { join(); }
  load_driver(const load_driver&) = delete;
  load_driver& operator=(const load_driver&) = delete;

  void start() {
    conn_->start();
    start_ = steady::now();
    asio::co_spawn(io_, publish_loop(), [this](std::exception_ptr e) { finished(e); });
    asio::co_spawn(io_, assign_loop(), [this](std::exception_ptr e) { finished(e); });
    thread_ = std::thread([this] { io_.run(); });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  std::string error() const { return error_; }

 private:
  void finished(std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        error_ += std::string(x.what()) + "; ";
      }
    }
    if (++loops_done_ == 2) {
      conn_->stop();
      out_.done = true;
    }
  }

  bool loading() const { return steady::now() - start_ < duration_; }

  asio::awaitable<void> pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  // A steady rate of new messages; failed ones go again with the same key until accepted.
  asio::awaitable<void> publish_loop() {
    long long issued = 0;
    std::deque<std::size_t> retry;
    auto give_up = start_ + duration_ + 60s;
    out_.custom.reserve(static_cast<std::size_t>(rate_ * duration_.count() + 1000));
    for (;;) {
      bool publishing = loading();
      long long due = publishing ? rate_ * ms_since(start_) / 1000 : issued;
      std::vector<std::size_t> todo;
      while (!retry.empty() && todo.size() < 1000) {
        todo.push_back(retry.front());
        retry.pop_front();
      }
      while (issued < due && todo.size() < 1000) {
        auto seq = static_cast<std::size_t>(issued++);
        custom_message m;
        m.user = user_name(static_cast<int>(seq % user_count));
        m.key = "c" + std::to_string(seq);
        m.data = fmt::format(R"({{"n":{},"t":{}}})", seq, now_ms());
        out_.custom.push_back(std::move(m));
        todo.push_back(seq);
      }
      if (todo.empty()) {
        if (!publishing) break;
        co_await pause(20ms);
        continue;
      }
      if (steady::now() > give_up) {
        out_.unaccepted = static_cast<long long>(todo.size());
        break;
      }
      std::vector<pushonce::publish_request> batch;
      for (auto i : todo) {
        auto& m = out_.custom[i];
        ++m.attempts;
        batch.push_back({m.user, m.data, m.key});
      }
      auto results = co_await pub_->publish_batch(std::move(batch));
      bool failed = false;
      for (std::size_t j = 0; j < todo.size(); ++j) {
        auto& m = out_.custom[todo[j]];
        if (!results[j]) {
          ++out_.publish_failures;
          failed = true;
          retry.push_back(todo[j]);
          continue;
        }
        m.id = results[j].value().id;
        m.duplicate = results[j].value().duplicate;
        if (m.duplicate) ++(m.attempts > 1 ? out_.retried_duplicates : out_.first_try_duplicates);
      }
      if (failed) co_await pause(100ms);
    }
  }

  // Every user joins; assigned resources are released one every 40 ms (their holders join
  // again at the tail), so the leader keeps assigning.
  asio::awaitable<void> assign_loop() {
    std::mt19937 rng(12345);
    auto last_reconcile = steady::time_point{};
    while (loading()) {
      if (steady::now() - last_reconcile > 1s) {
        co_await reconcile();
        last_reconcile = steady::now();
      }
      co_await pause(release_every);
      pushonce::redis::command holders{"HGETALL",
                                       pushonce::keys(ns).queue(queue_name, "res:holder")};
      auto h = co_await conn_->exec(std::move(holders));
      if (!h.ok() || h.value.elements.size() < 2) continue;
      auto pick =
          std::uniform_int_distribution<std::size_t>(0, h.value.elements.size() / 2 - 1)(rng);
      std::string resource = h.value.elements[pick * 2].str;
      std::string holder = h.value.elements[pick * 2 + 1].str;
      std::string queue = queue_name;
      auto r = co_await queues_->release_resource(std::move(queue), std::move(resource));
      if (!r) {
        // Not known whether it happened: never retried (a retry could release the next
        // holder); the accounting at the end allows for it.
        if (r.error().code == "redis_unavailable")
          ++out_.releases_ambiguous;
        else
          ++out_.releases_refused;
        continue;
      }
      ++out_.releases_ok;
      co_await join(std::move(holder));
    }
  }

  asio::awaitable<void> join(std::string user) {
    std::string queue = queue_name;
    auto r = co_await queues_->join(std::move(queue), std::move(user));
    if (r)
      ++out_.joins;
    else if (r.error().code != "already_queued" && r.error().code != "already_assigned")
      ++out_.join_failures;  // the next reconcile joins it
  }

  // Joins every user who neither waits nor holds a resource.
  asio::awaitable<void> reconcile() {
    pushonce::keys k(ns);
    std::vector<pushonce::redis::command> cmds{
        {"ZRANGE", k.queue(queue_name, "waiting"), "0", "-1"},
        {"HKEYS", k.queue(queue_name, "assigned")}};
    auto rs = co_await conn_->exec_all(std::move(cmds));
    if (!rs[0].ok() || !rs[1].ok()) co_return;
    std::unordered_set<std::string> present;
    for (auto* r : {&rs[0], &rs[1]})
      for (auto& e : r->value.elements) present.insert(e.str);
    for (int i = 0; i < user_count && loading(); ++i) {
      std::string user = user_name(i);
      if (!present.count(user)) co_await join(std::move(user));
    }
  }

  asio::io_context io_;
  std::shared_ptr<pushonce::redis::connection> conn_;
  std::unique_ptr<pushonce::publisher> pub_;
  std::unique_ptr<pushonce::queue_api> queues_;
  std::chrono::seconds duration_;
  long long rate_;
  load_result& out_;
  steady::time_point start_;
  std::thread thread_;
  int loops_done_ = 0;
  std::string error_;
};

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds every = 50ms) {
  auto deadline = steady::now() + timeout;
  for (;;) {
    try {
      if (pred()) return true;
    } catch (const std::exception&) {
    }
    if (steady::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

long long percentile(std::vector<long long> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// What one user's inbox holds.
struct inbox_view {
  std::vector<std::string> ids;  // by offset - 1
  std::vector<long long> offsets;
  std::vector<std::string> kinds;
  std::size_t malformed = 0;
};

}  // namespace

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

  struct event {
    steady::time_point at;
    std::string what;
  };
  std::vector<event> events;
  {
    auto total = std::chrono::duration_cast<std::chrono::milliseconds>(seconds);
    auto cycle = std::min<std::chrono::milliseconds>(total, 70s);
    for (auto c = 0ms; c < total; c += cycle) {
      auto at = [&](double fraction) {
        return load_start + c +
               std::chrono::milliseconds(
                   static_cast<long long>(fraction * static_cast<double>(cycle.count())));
      };
      events.push_back({at(0.2), "leader-kill"});
      events.push_back({at(0.4), "gateway-kill"});
      events.push_back({at(0.6), "redis-restart"});
      events.push_back({at(0.8), "redis-crash"});
    }
  }
  std::mt19937 rng(4242);
  long long worker_kills = 0, leader_kills = 0, gateway_kills = 0, redis_restarts = 0;
  long long leader_takeover_ms = -1, redis_down_ms = 0;
  std::vector<std::string> fault_log;
  auto next_worker_kill = load_start + 1s;
  constexpr auto never = steady::time_point::max();  // (std::optional trips -Wmaybe-uninitialized)
  steady::time_point leader_restart_at = never, gateway_restart_at = never,
                     leader_killed_at = never;
  std::size_t killed_leader = 0, killed_gateway = 0;
  std::string killed_leader_id;

  while (!load.done) {
    std::this_thread::sleep_for(20ms);
    auto now = steady::now();
    if (now >= next_worker_kill && now < load_start + seconds) {
      next_worker_kill += 1s;
      auto slot = std::uniform_int_distribution<std::size_t>(0, worker_count - 1)(rng);
      fleet::kill9(f.workers[slot]);
      f.start_worker(slot);
      ++worker_kills;
    }
    if (leader_killed_at != never && leader_takeover_ms < 0) {
      try {
        auto id = db.string({"HGET", k.plain("leader"), "id"});
        if (id && *id != killed_leader_id) leader_takeover_ms = ms_since(leader_killed_at);
      } catch (const std::exception&) {
      }
    }
    if (now >= leader_restart_at) {
      f.start_leader(killed_leader);  // a standby now
      leader_restart_at = never;
    }
    if (now >= gateway_restart_at) {
      f.start_gateway(killed_gateway);
      gateway_restart_at = never;
    }
    for (auto& e : events) {
      if (e.what.empty() || now < e.at) continue;
      auto what = std::exchange(e.what, "");
      auto t = ms_since(load_start);
      if (what == "leader-kill") {
        std::optional<std::string> pid;
        try {
          pid = db.string({"HGET", k.plain("leader"), "pid"});
        } catch (const std::exception&) {
        }
        bool done = false;
        for (std::size_t i = 0; i < f.leaders.size() && pid; ++i) {
          if (f.leaders[i] && std::to_string(f.leaders[i]->pid()) == *pid) {
            killed_leader_id = f.leader_ids[i];
            fleet::kill9(f.leaders[i]);
            killed_leader = i;
            leader_killed_at = steady::now();
            leader_takeover_ms = -1;
            leader_restart_at = steady::now() + 4s;
            ++leader_kills;
            done = true;
            fault_log.push_back(
                fmt::format("{} ms: kill -9 leader {} (pid {})", t, killed_leader_id, *pid));
          }
        }
        if (!done) e.what = what, e.at = now + 500ms;  // no leader right now: try again
      } else if (what == "gateway-kill") {
        killed_gateway = std::uniform_int_distribution<std::size_t>(0, gateway_count - 1)(rng);
        fleet::kill9(f.gateways[killed_gateway]);
        gateway_restart_at = steady::now() + 2s;
        ++gateway_kills;
        fault_log.push_back(fmt::format("{} ms: kill -9 gateway {}", t, killed_gateway));
      } else if (what == "redis-restart" || what == "redis-crash") {
        auto t0 = steady::now();
        if (what == "redis-crash") redis.kill();
        redis.restart();
        auto down = ms_since(t0);
        redis_down_ms = std::max(redis_down_ms, down);
        ++redis_restarts;
        fault_log.push_back(fmt::format("{} ms: {} ({} ms down)", t, what, down));
      }
    }
  }
  driver.join();
  if (leader_restart_at != never) f.start_leader(killed_leader);
  if (gateway_restart_at != never) f.start_gateway(killed_gateway);
  const auto load_end = steady::now();
  INFO("faults: ", fmt::format("{}", fmt::join(fault_log, "; ")));
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
  bool quiet = wait_until(quiet_now, 60s, 250ms);
  const auto quiet_ms = ms_since(load_end);
  // Still the same a while later (more than a lease and a sweep): nothing arrives twice.
  long long inboxed_at_quiet = inboxed;
  if (quiet) {
    std::this_thread::sleep_for(2500ms);
    quiet = wait_until(quiet_now, 5s, 250ms);
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
  auto bus_entries = read_stream(db, bus_outbox);
  auto queue_entries = read_stream(db, queue_outbox);
  std::unordered_map<std::string, inbox_view> inboxes;
  long long inbox_malformed = 0, inbox_offset_errors = 0;
  for (int i = 0; i < user_count; ++i) {
    auto user = user_name(i);
    auto& view = inboxes[user];
    for (auto& e : read_stream(db, k.user(user, "inbox"))) {
      auto v = parse_or_null(e.fields["f"]);
      if (!v.is_object()) {
        ++view.malformed;
        ++inbox_malformed;
        continue;
      }
      auto& o = v.as_object();
      long long off = int_field(o, "offset");
      if (off != static_cast<long long>(view.ids.size()) + 1 ||
          e.entry_id != std::to_string(off) + "-0")
        ++inbox_offset_errors;
      view.ids.push_back(str_field(o, "id"));
      view.offsets.push_back(off);
      view.kinds.push_back(str_field(o, "kind"));
    }
  }

  // Exactly once into the inboxes: each outbox entry once in its user's inbox, nothing else.
  long long duplicates = 0, losses = 0, gaps = 0, phantoms = 0, assignments = 0;
  std::vector<std::string> details;
  auto detail = [&](std::string what) {
    if (details.size() < 20) details.push_back(std::move(what));
  };
  std::unordered_map<std::string, std::unordered_map<std::string, int>> in_inbox;  // user → id → n
  for (auto& [user, view] : inboxes)
    for (std::size_t j = 0; j < view.ids.size(); ++j) {
      int n = ++in_inbox[user][view.ids[j]];
      if (n == 2) {
        ++duplicates;
        detail(fmt::format("id {} twice in the inbox of {}", view.ids[j], user));
      }
      if (view.kinds[j] == "assignment") ++assignments;
    }
  std::set<std::string> lost;  // "user id" of messages that are not in their user's inbox
  std::unordered_map<std::string, std::unordered_set<std::string>> outboxed_ids;
  for (auto* entries : {&bus_entries, &queue_entries})
    for (auto& e : *entries)
      for (auto line : pushonce::split_bus_payload(e.fields["m"])) {
        auto m = pushonce::parse_bus_message(line);
        if (!m) {
          detail(fmt::format("outbox entry {} holds a malformed line", e.entry_id));
          continue;
        }
        const auto &id = m->id, &user = m->user;
        outboxed_ids[user].insert(id);
        if (!in_inbox[user].count(id)) {
          lost.insert(user + " " + id);
          detail(
              fmt::format("outbox entry {} (id {}) to {} not in its inbox", e.entry_id, id, user));
        }
      }
  for (auto& [user, ids] : in_inbox)
    for (auto& [id, n] : ids)
      if (!outboxed_ids[user].count(id)) {
        ++phantoms;
        detail(fmt::format("id {} in the inbox of {} is in no outbox", id, user));
      }

  // Custom publishes: one message per key; each id in its user's inbox.
  std::unordered_set<std::string> custom_ids;
  for (auto& m : load.custom) {
    if (m.id.empty()) continue;
    custom_ids.insert(m.id);
    if (!in_inbox[m.user].count(m.id)) {
      lost.insert(m.user + " " + m.id);
      detail(fmt::format("custom message {} (key {}) to {} not in its inbox", m.id, m.key, m.user));
    }
  }
  losses += static_cast<long long>(lost.size());

  // Sessions: exactly their inbox, in offset order, each id once.
  long long frames = 0, not_recovered = 0, welcome_failures = 0, protocol_errors = 0,
            reconnects = 0, mismatches = 0;
  std::vector<long long> latencies;
  for (auto& sp : sessions) {
    auto& s = *sp;
    auto& view = inboxes[s.user];
    frames += static_cast<long long>(s.frames.size());
    not_recovered += s.not_recovered;
    welcome_failures += s.welcome_failures;
    protocol_errors += s.protocol_errors;
    reconnects += s.connects - 1;
    latencies.insert(latencies.end(), s.latency_ms.begin(), s.latency_ms.end());
    gaps += s.offset_gaps;
    std::unordered_set<std::string> seen;
    for (std::size_t j = 0; j < s.frames.size(); ++j) {
      const auto& [id, off] = s.frames[j];
      if (!seen.insert(id).second) {
        ++duplicates;
        detail(fmt::format("session {} got id {} twice (offset {})", s.user, id, off));
      }
      if (off < 1 || static_cast<std::size_t>(off) > view.ids.size()) {
        ++mismatches;
        detail(fmt::format("session {}: offset {} (id {}) is not in the inbox", s.user, off, id));
      } else if (view.ids[static_cast<std::size_t>(off) - 1] != id) {
        ++mismatches;
        detail(fmt::format("session {}: offset {} is id {}, the inbox says {}", s.user, off, id,
                           view.ids[static_cast<std::size_t>(off) - 1]));
      }
    }
    for (std::size_t j = 0; j < view.ids.size(); ++j)
      if (!seen.count(view.ids[j])) {
        ++losses;
        detail(fmt::format("session {} never got id {} (offset {})", s.user, view.ids[j], j + 1));
      }
    for (auto& p : s.problems) detail("session " + s.user + ": " + p);
  }

  auto dead_letters = db.integer({"XLEN", k.plain("dead-letters")});
  // The workers' counters (statistics: a worker killed with SIGKILL loses up to 100 ms).
  auto stat = [&](const char* name) {
    auto v = db.string({"HGET", k.plain("stats"), name});
    return v ? std::atoll(v->c_str()) : 0LL;
  };
  const long long redelivered = stat("redelivered"), suppressed = stat("duplicates_suppressed");
  // The leader assigned each freed resource once: assignments + free resources at the end
  // = resources + releases that happened (ambiguous ones may or may not have).
  auto free_now = db.integer({"ZCARD", k.queue(queue_name, "res:free")});
  auto holders = db.cmd({"HGETALL", k.queue(queue_name, "res:holder")});
  long long base = resource_count + load.releases_ok;
  long long accounted = assignments + free_now;
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
      outboxed, custom_ids.size(), assignments, sessions.size(), frames, duplicates, losses, gaps,
      not_recovered, dead_letters, worker_kills, leader_kills, leader_takeover_ms, gateway_kills,
      redis_restarts, redis_down_ms, reconnects, load.publish_failures, load.retried_duplicates,
      load.releases_ok, load.releases_ambiguous,
      latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end()),
      percentile(latencies, 0.99), redelivered, suppressed, quiet_ms,
      static_cast<double>(run_ms) / 1000.0);
  std::printf("%s\n", summary.c_str());
  std::fflush(stdout);

  INFO(summary);
  INFO("details:\n", fmt::format("{}", fmt::join(details, "\n")));
  CHECK_MESSAGE(quiet, "not quiet within 60 s: outbox entries ", outboxed, ", inbox entries ",
                inboxed, " (", inboxed_at_quiet, " at first quiet), sessions behind ",
                behind_sessions);
  CHECK(duplicates == 0);
  CHECK(losses == 0);
  CHECK(gaps == 0);
  CHECK(phantoms == 0);
  CHECK(mismatches == 0);  // a session's frame at offset N is the inbox's entry N
  CHECK(not_recovered == 0);
  CHECK(welcome_failures == 0);
  CHECK(protocol_errors == 0);
  CHECK(inbox_malformed == 0);
  CHECK(inbox_offset_errors == 0);
  CHECK(dead_letters == 0);
  // Idempotency: one message per key, whatever the retries.
  CHECK(static_cast<long long>(custom_ids.size()) == static_cast<long long>(load.custom.size()));
  long long bus_messages = 0;  // a publish batch is one outbox entry, one line per message
  for (auto& e : bus_entries)
    bus_messages += static_cast<long long>(pushonce::split_bus_payload(e.fields["m"]).size());
  CHECK(bus_messages == static_cast<long long>(custom_ids.size()));
  CHECK(outboxed >= 20000 * seconds.count() / 70 * rate / 300);
  CHECK(assignments > 0);
  CHECK_MESSAGE(assignments_consistent, "assignments ", assignments, " + free ", free_now,
                " vs resources + releases ", base, " (+ up to ", load.releases_ambiguous,
                " ambiguous)");
  CHECK(static_cast<long long>(holding_users.size()) == assigned_users);
  CHECK(leader_kills >= 1);
  CHECK(leader_takeover_ms >= 0);
  CHECK(gateway_kills >= 1);
  CHECK(redis_restarts >= 2);
  CHECK(worker_kills >= seconds.count() - 2);
}
