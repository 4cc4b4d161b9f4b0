// bench_waiting_room: the waiting room at flash-crowd scale, end to end.
//
// Starts a private redis-server, one pushonce-leader, W workers and G gateways (--dev-auth),
// then P client processes (this program again, --client) that open one WebSocket session
// per user (user i on gateway i mod G, from loopback address 127.0.0.(2 + client)), say
// hello and join the queue all at once. Then, in order:
//   1. joins: how long until all N had their `joined` reply; RSS per session (gateways),
//      Redis memory per waiting user;
//   2. one user churning: 4 sessions of one extra user alternate join/leave at 5 ops/s
//      each (the per-session limit) for 10 s: Redis calls/s (INFO commandstats, commands
//      inside scripts included) against an idle second measured before;
//   3. R resources in one `resource add`: time from the add to each assigned user's first
//      assignment frame (p50/p99/max), assignments/s, Redis CPU per assignment;
//   4. sustained: --sustained-rate resources/s added in chunks for 3 s while
//      --churn-percent of the waiting users leave and join again: assignments/s, and the
//      position frames/s the sessions got and the gateways' CPU seconds from the start of
//      this phase to the final positions;
//   5. checks: every user got at most one assignment and every assignment reached its user
//      (duplicates, losses), every session still waiting was last told its true rank.
// Prints one JSON line; exit 0 when nothing was lost, duplicated or mispositioned.
//
// --opening instead measures a scheduled, shuffled opening: the queue is put in its
// pre-queue (`open --at`, a few seconds after the clients start, --shuffle), all N join the
// pre-queue, and at the opening time the leader moves them into the line. Prints the time
// from the opening to the last session's first position frame (and its p50/p99), the
// opening's duration in Redis, and the Spearman correlation of join order vs position
// (|rho| near 0: the order does not depend on arrival); checks that every user waits once
// and every session was told its true rank.
//
//   bench_waiting_room [--users N] [--gateways G] [--workers W] [--clients P]
//                      [--resources R] [--batch B] [--churn-percent X] [--sustained-rate N]
//                      [--join-rate N] [--interval-ms MS] [--cluster] [--admission-key FILE]
//                      [--opening [--opening-delay-s S]]
// --interval-ms is the gateways' --position-interval-ms (1000).
// --admission-key FILE: the leader signs an ES256 admission token per assignment
// ("admission_tokens":true in the result when the last assignment carried one).
// --cluster runs it on a private 3-master Redis Cluster (figures summed over the masters).
// --join-rate spreads the arrivals (N per second in all); by default everyone comes at once.
// A session whose join is refused or closed tries again (0.5-1.5 s later, 10 times), as the
// browser client does.

#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/use_tuple.hpp"
#include "gateway/queue/position_schedule.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_cluster.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using pushonce::use_tuple;
using pushonce::test::process;

namespace {

struct options {
  long long users = 2000, gateways = 2, workers = 3, clients = 1, resources = 1000;
  long long batch = 200, churn_percent = 1, sustained_rate = 10000;
  long long join_rate = 0;
  long long interval_ms = 1000;  // the gateways' --position-interval-ms  // arrivals per second
                                 // (per client in --client mode); 0: at once
  // --client mode
  long long client = -1, first = 0, last = 0, churn_seconds = 0;
  std::string ports, dir;
  std::string admission_key;      // --admission-key: the leader signs admission tokens (ES256)
  bool churn_one = false;         // the 4-session single-user churner
  bool cluster = false;           // a 3-master Redis Cluster instead of one redis-server
  bool opening = false;           // measure a shuffled opening of a pre-queue instead
  long long opening_delay_s = 0;  // --opening: seconds from the start to the opening (0: auto)
};

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--churn-one") {
      o.churn_one = true;
      continue;
    }
    if (a == "--cluster") {
      o.cluster = true;
      continue;
    }
    if (a == "--opening") {
      o.opening = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: %s needs a value\n", a.c_str());
      std::exit(2);
    }
    std::string v = argv[++i];
    auto num = [&] {
      try {
        return std::stoll(v);
      } catch (...) {
        std::fprintf(stderr, "error: %s needs a number\n", a.c_str());
        std::exit(2);
      }
    };
    if (a == "--users")
      o.users = num();
    else if (a == "--gateways")
      o.gateways = num();
    else if (a == "--workers")
      o.workers = num();
    else if (a == "--clients")
      o.clients = num();
    else if (a == "--resources")
      o.resources = num();
    else if (a == "--batch")
      o.batch = num();
    else if (a == "--churn-percent")
      o.churn_percent = num();
    else if (a == "--sustained-rate")
      o.sustained_rate = num();
    else if (a == "--join-rate")
      o.join_rate = num();
    else if (a == "--interval-ms")
      o.interval_ms = num();
    else if (a == "--opening-delay-s")
      o.opening_delay_s = num();
    else if (a == "--admission-key")
      o.admission_key = v;
    else if (a == "--client")
      o.client = num();
    else if (a == "--first")
      o.first = num();
    else if (a == "--last")
      o.last = num();
    else if (a == "--churn-seconds")
      o.churn_seconds = num();
    else if (a == "--ports")
      o.ports = v;
    else if (a == "--dir")
      o.dir = v;
    else {
      std::fprintf(stderr,
                   "usage: bench_waiting_room [--users N] [--gateways G] [--workers W] "
                   "[--clients P] [--resources R] [--batch B] [--churn-percent X] "
                   "[--sustained-rate N] [--join-rate N] [--interval-ms MS] [--cluster]\n"
                   "                          [--admission-key FILE]\n");
      std::exit(2);
    }
  }
  return o;
}

// --- client mode ----------------------------------------------------------------------------

// One waiting user's session, as the client process sees it.
struct user_state {
  long long index = 0;
  long long position = 0;     // the latest joined/position value
  long long assignments = 0;  // assignment frames
  long long first_assignment_ms = 0;
  long long first_position_ms = 0;  // the first frame with a number as position
  long long position_frames = 0;    // position frames (answers and pushes)
  bool approx = false;              // the latest position was rounded (far from the head)
  std::string assignment_id;
  long long duplicates = 0;
  bool joined = false;
  bool churner = false;
};

// The number after `"field":` in a frame pushonce renders (no JSON parse on this path).
long long number_of(const std::string& f, std::string_view field) {
  auto at = f.find(field);
  if (at == std::string::npos) return -1;
  return std::atoll(f.c_str() + at + field.size());
}

// What a session at `rank` is last told: the rank itself, or rounded the gateway's way when
// its last frame said approx.
long long told_value(long long rank, bool approx) {
  return approx ? pushonce::gateway::round_3_significant(rank) : rank;
}

struct client {
  options o;
  asio::io_context io;
  std::vector<tcp::endpoint> gateways;
  std::vector<user_state> users;
  long long joined = 0, join_done_ms = 0, failed = 0;
  bool churning = false;

  void on_frame(user_state& u, const std::string& f) {
    if (f.find(R"("type":"position")") != std::string::npos ||
        f.find(R"("type":"joined")") != std::string::npos) {
      u.position = number_of(f, R"("position":)");
      u.approx = f.find(R"("approx":true)") != std::string::npos;
      if (f.find(R"("type":"position")") != std::string::npos) ++u.position_frames;
      if (u.position > 0 && !u.first_position_ms) u.first_position_ms = now_ms();
      if (!u.joined) {
        u.joined = true;
        ++joined;
        settled();
      }
    } else if (f.find(R"("kind":"assignment")") != std::string::npos) {
      auto id_at = f.find(R"("id":")");
      auto id = f.substr(id_at + 6, f.find('"', id_at + 6) - id_at - 6);
      if (u.assignments > 0 && id == u.assignment_id) ++u.duplicates;
      if (u.assignments++ == 0) {
        u.first_assignment_ms = now_ms();
        u.assignment_id = id;
      }
      u.position = 0;
    } else if (f.find(R"("type":"left")") != std::string::npos) {
      u.position = 0;
    }
  }

  // Every session joined or failed: tell the coordinator (once).
  void settled() {
    if (join_done_ms || joined + failed < static_cast<long long>(users.size())) return;
    join_done_ms = now_ms();
    write_file("joined", fmt::format("{} {} {}\n", joined, join_done_ms, failed));
  }

  void fail(const user_state& u, const boost::system::error_code& ec, const char* what) {
    if (failed++ < 5)
      std::fprintf(stderr, "user %lld: %s: %s\n", u.index, what, ec.message().c_str());
    settled();
  }

  void write_file(const std::string& what, const std::string& text) {
    auto path = fmt::format("{}/client-{}.{}", o.dir, o.client, what);
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
  }

  void report() {
    std::string out;
    out.reserve(users.size() * 32);
    for (auto& u : users)
      out += fmt::format("{} {} {} {} {} {} {} {}\n", u.index, u.position, u.assignments,
                         u.first_assignment_ms, u.duplicates, u.first_position_ms,
                         u.position_frames, u.approx ? 1 : 0);
    write_file("report", out);
  }

  // A user's session until it has joined (what a browser does: reconnect after a refusal,
  // a close or an error answer, up to 10 times, 0.5-1.5 s apart), then its frames.
  asio::awaitable<void> run_user(user_state& u) {
    auto ex = co_await asio::this_coro::executor;
    std::mt19937 rng(static_cast<unsigned>(u.index));
    for (int attempt = 0; attempt < 10; ++attempt) {
      auto [ec, what] = co_await session(u);
      if (u.joined || o.churn_one) co_return;
      if (attempt == 9) {
        fail(u, ec, what);
        co_return;
      }
      asio::steady_timer t(ex, std::chrono::milliseconds(500 + rng() % 1000));
      co_await t.async_wait(use_tuple);
    }
  }

  // One connection: connect, hello, join, then frames until it closes (or, before the
  // join succeeded, an error answer to it). What ended it.
  asio::awaitable<std::pair<boost::system::error_code, const char*>> session(user_state& u) {
    auto ex = co_await asio::this_coro::executor;
    websocket::stream<tcp::socket> ws(ex);
    auto& sock = ws.next_layer();
    boost::system::error_code ec;
    sock.open(tcp::v4(), ec);
    // Spread over loopback addresses: each (source, gateway) pair has its own port range.
    // The port is picked at connect (IP_BIND_ADDRESS_NO_PORT): a bind to port 0 searches
    // the bound ports one by one and would cost more than everything else here.
    int one = 1;
    ::setsockopt(sock.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sock.bind({asio::ip::make_address_v4(fmt::format("127.0.0.{}", 2 + o.client % 250)), 0}, ec);
    auto ep = gateways[static_cast<std::size_t>(u.index) % gateways.size()];
    auto [cec] = co_await sock.async_connect(ep, use_tuple);
    if (cec) co_return std::pair{cec, "connect"};
    auto [hec] = co_await ws.async_handshake("127.0.0.1", "/ws", use_tuple);
    if (hec) co_return std::pair{hec, "handshake"};
    ws.text(true);
    auto user = o.churn_one ? std::string("churner") : fmt::format("u{}", u.index);
    auto hello = fmt::format(R"({{"op":"hello","user":"{}"}})", user);
    co_await ws.async_write(asio::buffer(hello), use_tuple);
    if (!o.churn_one) {
      std::string join = R"({"op":"join"})";
      co_await ws.async_write(asio::buffer(join), use_tuple);
    }
    if (u.churner || o.churn_one) asio::co_spawn(ex, churn(ws, u), asio::detached);
    beast::flat_buffer buf;
    for (;;) {
      auto [rec, n] = co_await ws.async_read(buf, use_tuple);
      if (rec) co_return std::pair{rec, "read"};
      auto f = beast::buffers_to_string(buf.data());
      buf.consume(n);
      if (!u.joined && !o.churn_one && f.find(R"("type":"error")") != std::string::npos &&
          f.find(R"("op":"join")") != std::string::npos &&
          f.find(R"("code":"conflict")") != std::string::npos) {
        // An earlier join went through though its answer was lost: where is it?
        std::string ask = R"({"op":"position"})";
        co_await ws.async_write(asio::buffer(ask), use_tuple);
        continue;
      }
      if (!u.joined && !o.churn_one && f.find(R"("type":"error")") != std::string::npos &&
          f.find(R"("op":"join")") != std::string::npos) {
        ws.next_layer().close(ec);  // refused (Redis busy): try again on a new connection
        co_return std::pair{boost::system::error_code{}, "join refused"};
      }
      on_frame(u, f);
    }
  }

  // A churning session: leave and join again (or, --churn-one, join then leave) once per
  // ~200 ms per op while churning lasts (5 ops/s, the per-session limit).
  asio::awaitable<void> churn(websocket::stream<tcp::socket>& ws, user_state& u) {
    auto ex = co_await asio::this_coro::executor;
    std::mt19937 rng(static_cast<unsigned>(u.index));
    asio::steady_timer t(ex);
    while (!churning) {
      t.expires_after(50ms);
      co_await t.async_wait(use_tuple);
    }
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(o.churn_seconds);
    t.expires_after(std::chrono::milliseconds(rng() % 400));
    co_await t.async_wait(use_tuple);
    bool in = !o.churn_one;
    while (std::chrono::steady_clock::now() < until || (!in && !o.churn_one)) {
      std::string op = in ? R"({"op":"leave"})" : R"({"op":"join"})";
      auto [wec, n] = co_await ws.async_write(asio::buffer(op), use_tuple);
      if (wec) co_return;
      in = !in;
      t.expires_after(210ms);
      co_await t.async_wait(use_tuple);
    }
  }

  int run() {
    std::stringstream ss(o.ports);
    for (std::string p; std::getline(ss, p, ',');)
      gateways.emplace_back(asio::ip::make_address_v4("127.0.0.1"),
                            static_cast<unsigned short>(std::stoi(p)));
    if (o.churn_one) {
      users.resize(4);
    } else {
      for (long long i = o.first; i < o.last; ++i) {
        user_state u;
        u.index = i;
        u.churner = o.churn_percent > 0 && i % (100 / o.churn_percent) == 7;
        users.push_back(u);
      }
    }
    // Arrivals: all at once, or --join-rate per second spread over this client's users.
    asio::co_spawn(
        io,
        [this]() -> asio::awaitable<void> {
          asio::steady_timer t(io);
          const auto start = std::chrono::steady_clock::now();
          for (std::size_t i = 0; i < users.size(); ++i) {
            if (o.join_rate > 0 && i % 100 == 0) {
              t.expires_at(start + std::chrono::microseconds(static_cast<long long>(i) * 1000000 /
                                                             o.join_rate));
              co_await t.async_wait(use_tuple);
            }
            asio::co_spawn(io, run_user(users[i]), asio::detached);
          }
        },
        asio::detached);
    asio::signal_set signals(io, SIGUSR1, SIGUSR2, SIGTERM);
    std::function<void(boost::system::error_code, int)> on_signal =
        [&](boost::system::error_code ec, int sig) {
          if (ec) return;
          if (sig == SIGUSR2) churning = true;
          if (sig == SIGUSR1 || sig == SIGTERM) report();
          if (sig == SIGTERM) {
            io.stop();
            return;
          }
          signals.async_wait(on_signal);
        };
    signals.async_wait(on_signal);
    io.run();
    return 0;
  }
};

// --- coordinator ----------------------------------------------------------------------------

long long rss_kb(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  return 0;
}

using masters = std::vector<std::unique_ptr<pushonce::test::sync_redis>>;

long long info_field(pushonce::test::sync_redis& r, const char* section, const std::string& name) {
  auto info = r.text({"INFO", section});
  auto at = info.find(name + ":");
  return at == std::string::npos ? -1 : std::atoll(info.c_str() + at + name.size() + 1);
}

long long info_field(masters& all, const char* section, const std::string& name) {
  long long sum = 0;
  for (auto& m : all) sum += info_field(*m, section, name);
  return sum;
}

double redis_cpu_s(pushonce::test::sync_redis& r);
double redis_cpu_s(masters& all) {
  double sum = 0;
  for (auto& m : all) sum += redis_cpu_s(*m);
  return sum;
}

// A process's CPU time (user + system) from /proc/PID/stat, in seconds.
double process_cpu_s(int pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto after = text.rfind(')');
  if (after == std::string::npos) return 0;
  std::istringstream fields(text.substr(after + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) stime = std::atof(f.c_str());
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double redis_cpu_s(pushonce::test::sync_redis& r) {
  auto info = r.text({"INFO", "cpu"});
  auto get = [&](const std::string& k) {
    auto at = info.find(k + ":");
    return at == std::string::npos ? 0.0 : std::atof(info.c_str() + at + k.size() + 1);
  };
  return get("used_cpu_sys") + get("used_cpu_user");
}

long long redis_calls(pushonce::test::sync_redis& r);
long long redis_calls(masters& all) {
  long long sum = 0;
  for (auto& m : all) sum += redis_calls(*m);
  return sum;
}

long long redis_calls(pushonce::test::sync_redis& r) {
  auto info = r.text({"INFO", "commandstats"});
  long long total = 0;
  for (std::size_t at = 0; (at = info.find("calls=", at)) != std::string::npos; at += 6)
    total += std::atoll(info.c_str() + at + 6);
  return total;
}

long long percentile(std::vector<long long> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// A port below the ephemeral range (the clients' own ports can't take it) that is free now.
std::uint16_t listen_port(long long i) {
  for (int base = 20000 + static_cast<int>(getpid() % 500) * 16 + static_cast<int>(i); base < 32000;
       base += 16 * 500 / 8) {
    asio::io_context io;
    tcp::acceptor a(io);
    boost::system::error_code ec;
    a.open(tcp::v4(), ec);
    a.bind({asio::ip::address_v4::any(), static_cast<unsigned short>(base)}, ec);
    if (!ec) return static_cast<std::uint16_t>(base);
  }
  throw std::runtime_error("no free port below 32000");
}

bool wait_files(const std::string& dir, const std::string& what, long long n,
                std::chrono::seconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    long long have = 0;
    for (long long c = 0; c < n; ++c)
      have += std::filesystem::exists(fmt::format("{}/client-{}.{}", dir, c, what));
    if (have == n) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// Clients whose report was missing at the last collect(): their users' assignments are not
// counted as seen, so "lost" then says nothing about the pipeline (the client was too
// starved to write in time); the result line says how many.
long long unreported_clients = 0;

// Every client's per-user lines: index position assignments first_ms duplicates.
std::vector<user_state> collect(const std::string& dir, std::vector<std::unique_ptr<process>>& cs) {
  for (long long c = 0; c < static_cast<long long>(cs.size()); ++c)
    std::filesystem::remove(fmt::format("{}/client-{}.report", dir, c));
  for (auto& c : cs) c->kill(SIGUSR1);
  wait_files(dir, "report", static_cast<long long>(cs.size()), 60s);
  std::vector<user_state> out;
  unreported_clients = 0;
  for (std::size_t c = 0; c < cs.size(); ++c) {
    const auto path = fmt::format("{}/client-{}.report", dir, c);
    if (!std::filesystem::exists(path)) ++unreported_clients;
    std::ifstream f(path);
    user_state u;
    int approx = 0;
    while (f >> u.index >> u.position >> u.assignments >> u.first_assignment_ms >> u.duplicates >>
           u.first_position_ms >> u.position_frames >> approx) {
      u.approx = approx != 0;
      out.push_back(u);
    }
  }
  return out;
}

// Spearman's rho of two rankings of the same n items (ranks 1..n, no ties).
double spearman(const std::vector<std::pair<long long, long long>>& ranks) {
  const double n = static_cast<double>(ranks.size());
  if (n < 2) return 0;
  double d2 = 0;
  for (auto& [a, b] : ranks) d2 += static_cast<double>(a - b) * static_cast<double>(a - b);
  return 1.0 - 6.0 * d2 / (n * (n * n - 1.0));
}

// --opening: the pre-queue fills, opens shuffled at its time, and every session is told.
int measure_opening(const options& o, pushonce::test::sync_redis& r, const std::string& ns,
                    const std::string& bin, const pushonce::test::environment& env,
                    const std::filesystem::path& dir, const std::string& ports,
                    std::vector<std::unique_ptr<process>>& gateways) {
  const long long delay_s = o.opening_delay_s > 0 ? o.opening_delay_s : 10 + o.users / 4000;
  const long long opens_at = now_ms() + delay_s * 1000;
  auto opened = pushonce::test::run_capture(
      bin + "/pushonce-leader", {"open", "--at", std::to_string(opens_at), "--shuffle"}, env, 10s);
  if (opened.exit_code != 0) {
    std::fprintf(stderr, "error: open --at: %s\n", opened.err.c_str());
    return 1;
  }
  std::vector<std::unique_ptr<process>> clients;
  const long long per = (o.users + o.clients - 1) / o.clients;
  const long long join_start = now_ms();
  auto self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (long long c = 0; c < o.clients; ++c) {
    std::filesystem::create_directories(dir / fmt::format("c{}", c));
    clients.push_back(std::make_unique<process>(
        self,
        std::vector<std::string>{"--client", std::to_string(c), "--first", std::to_string(c * per),
                                 "--last", std::to_string(std::min(o.users, (c + 1) * per)),
                                 "--ports", ports, "--dir", dir.string(), "--churn-percent", "0",
                                 "--join-rate", std::to_string(o.join_rate / o.clients)},
        pushonce::test::environment{}, dir.string() + fmt::format("/c{}", c)));
  }
  const auto prequeue = fmt::format("{}:{{q:default}}:prequeue", ns);
  const auto waiting = fmt::format("{}:{{q:default}}:waiting", ns);
  if (!wait_files(dir.string(), "joined", o.clients, std::chrono::seconds(delay_s + 60))) {
    std::fprintf(stderr, "error: not every client joined its users (%lld pre-queued)\n",
                 r.integer({"ZCARD", prequeue}));
    return 1;
  }
  const long long join_end = now_ms();
  if (join_end >= opens_at) {
    std::fprintf(stderr, "error: the joins took past the opening time: give --opening-delay-s\n");
    return 1;
  }
  // Join order: the pre-queue's scores, read just before the opening.
  std::map<std::string, long long> join_rank;
  {
    auto line = r.cmd({"ZRANGE", prequeue, "0", "-1"});
    for (std::size_t i = 0; i < line->elements; ++i)
      join_rank[std::string(line->element[i]->str, line->element[i]->len)] =
          static_cast<long long>(i) + 1;
  }
  const long long prequeued = static_cast<long long>(join_rank.size());
  while (now_ms() < opens_at) std::this_thread::sleep_for(1ms);
  long long moved_at = 0;
  while (now_ms() - opens_at < 60000) {
    if (r.integer({"ZCARD", prequeue}) == 0) {
      moved_at = now_ms();
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  // Every session's first position, then the reports.
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * o.interval_ms + 2000));
  auto got = collect(dir.string(), clients);
  std::map<std::string, long long> rank;
  {
    auto line = r.cmd({"ZRANGE", waiting, "0", "-1"});
    for (std::size_t i = 0; i < line->elements; ++i)
      rank[std::string(line->element[i]->str, line->element[i]->len)] =
          static_cast<long long>(i) + 1;
  }
  std::vector<long long> told;
  std::vector<std::pair<long long, long long>> pairs;
  long long never = 0, wrong = 0;
  for (auto& u : got) {
    auto name = fmt::format("u{}", u.index);
    auto it = rank.find(name);
    if (it == rank.end() || u.position != told_value(it->second, u.approx)) ++wrong;
    if (!u.first_position_ms)
      ++never;
    else
      told.push_back(u.first_position_ms - opens_at);
    if (it != rank.end() && join_rank.count(name)) pairs.push_back({join_rank[name], it->second});
  }
  for (auto& c : clients) c->stop(5s);
  long long gw_rss = 0;
  for (auto& g : gateways) gw_rss += rss_kb(g->pid());
  const long long line_length = r.integer({"ZCARD", waiting});
  auto out =
      fmt::format(R"({{"mode":"opening","users":{},"gateways":{},"clients":{},"interval_ms":{},)"
                  R"("prequeued":{},"join_s":{:.2f},"opening_moved_ms":{},"all_positions_ms":{},)"
                  R"("positions_ms_p50":{},"positions_ms_p99":{},"sessions_never_told":{},)"
                  R"("wrong_positions":{},"line_length":{},"spearman_join_vs_position":{:.4f},)"
                  R"("gateway_rss_kb_per_session":{:.1f}}})",
                  o.users, o.gateways, o.clients, o.interval_ms, prequeued,
                  static_cast<double>(join_end - join_start) / 1000.0,
                  moved_at ? moved_at - opens_at : -1, percentile(told, 1.0), percentile(told, 0.5),
                  percentile(told, 0.99), never, wrong, line_length, spearman(pairs),
                  static_cast<double>(gw_rss) / static_cast<double>(std::max(1LL, line_length)));
  std::printf("%s\n", out.c_str());
  std::fflush(stdout);
  const bool ok = never == 0 && wrong == 0 && line_length == o.users && prequeued == o.users;
  std::error_code ec;
  if (ok)
    std::filesystem::remove_all(dir, ec);
  else
    std::fprintf(stderr, "logs kept in %s\n", dir.c_str());
  return ok ? 0 : 1;
}

int coordinate(const options& o) {
  // Children inherit the open-files limit: raise it to the hard one (20,000 here).
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  // One redis-server, or (--cluster) a 3-master Redis Cluster: `r` is the master of the
  // queue's slot, `all` every master (calls, CPU and memory are summed over them).
  std::optional<pushonce::test::redis_server> redis;
  std::optional<pushonce::test::redis_cluster> cluster;
  std::vector<std::unique_ptr<pushonce::test::sync_redis>> all;
  std::uint16_t queue_port = 0;
  if (o.cluster) {
    cluster.emplace();
    queue_port = cluster->master_of(cluster->slot_of("bench:{q:default}:waiting"));
    for (auto port : cluster->masters())
      all.push_back(std::make_unique<pushonce::test::sync_redis>(port));
  } else {
    redis.emplace();
    queue_port = redis->port();
    all.push_back(std::make_unique<pushonce::test::sync_redis>(queue_port));
  }
  pushonce::test::sync_redis r(queue_port);
  const std::string ns = "bench", bin = PUSHONCE_BIN_DIR;
  pushonce::test::environment env{{o.cluster ? "PUSHONCE_REDIS_CLUSTER" : "PUSHONCE_REDIS",
                                   o.cluster ? cluster->url() : redis->url()},
                                  {"PUSHONCE_NAMESPACE", ns},
                                  {"PUSHONCE_LOG_LEVEL", "warn"}};
  auto dir = std::filesystem::temp_directory_path() / fmt::format("bench-wr-{}", getpid());
  std::filesystem::create_directories(dir);
  std::vector<std::unique_ptr<process>> procs, gateways, clients;
  std::vector<std::string> leader_args{"run", "--assign-batch", std::to_string(o.batch)};
  if (!o.admission_key.empty())
    leader_args.insert(leader_args.end(), {"--admission-key", o.admission_key});
  procs.push_back(std::make_unique<process>(bin + "/pushonce-leader", leader_args, env));
  for (long long i = 0; i < o.workers; ++i)
    procs.push_back(std::make_unique<process>(
        bin + "/pushonce-worker", std::vector<std::string>{"--id", fmt::format("w{}", i)}, env));
  std::string ports;
  for (long long i = 0; i < o.gateways; ++i) {
    std::filesystem::create_directories(dir / fmt::format("g{}", i));
    auto port = listen_port(i);
    ports += (i ? "," : "") + std::to_string(port);
    gateways.push_back(std::make_unique<process>(
        bin + "/pushonce-gateway",
        std::vector<std::string>{"--listen", fmt::format("0.0.0.0:{}", port), "--dev-auth", "--id",
                                 fmt::format("g{}", i), "--max-connections-per-ip", "0",
                                 "--max-sessions-per-ip", "0", "--position-interval-ms",
                                 std::to_string(o.interval_ms)},
        env, (dir / fmt::format("g{}", i)).string()));
  }
  // The queue must be registered (the leader does it) before anyone joins.
  auto registered = fmt::format("{}:{{q:default}}:registered", ns);
  for (int i = 0; i < 100 && r.integer({"EXISTS", registered}) != 1; ++i)
    std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(500ms);  // gateways listening, workers subscribed
  if (o.opening) return measure_opening(o, r, ns, bin, env, dir, ports, gateways);
  const double mem0 = static_cast<double>(info_field(all, "memory", "used_memory"));

  // 1. Everyone joins at once.
  const long long per = (o.users + o.clients - 1) / o.clients;
  const long long join_start = now_ms();
  auto self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (long long c = 0; c < o.clients; ++c) {
    std::filesystem::create_directories(dir / fmt::format("c{}", c));
    clients.push_back(std::make_unique<process>(
        self,
        std::vector<std::string>{"--client", std::to_string(c), "--first", std::to_string(c * per),
                                 "--last", std::to_string(std::min(o.users, (c + 1) * per)),
                                 "--ports", ports, "--dir", dir.string(), "--churn-percent",
                                 std::to_string(o.churn_percent), "--churn-seconds", "5",
                                 "--join-rate", std::to_string(o.join_rate / o.clients)},
        pushonce::test::environment{}, dir.string() + fmt::format("/c{}", c)));
  }
  if (!wait_files(dir.string(), "joined", o.clients, 120s)) {
    std::fprintf(stderr, "error: not every client joined its users within 120 s (%lld waiting)\n",
                 r.integer({"ZCARD", fmt::format("{}:{{q:default}}:waiting", ns)}));
    for (auto& c : clients) std::fprintf(stderr, "%s", c->stderr_text().c_str());
    return 1;
  }
  long long join_end = 0, join_failed = 0;
  for (long long c = 0; c < o.clients; ++c) {
    std::ifstream f(fmt::format("{}/client-{}.joined", dir.string(), c));
    long long n = 0, t = 0, failed = 0;
    f >> n >> t >> failed;
    join_end = std::max(join_end, t);
    join_failed += failed;
  }
  if (join_failed) {
    std::fprintf(stderr, "error: %lld sessions failed to join\n", join_failed);
    for (auto& c : clients) std::fprintf(stderr, "%s", c->stderr_text().c_str());
    for (auto& g : gateways) std::fprintf(stderr, "gateway: %s", g->stderr_text().c_str());
    return 1;
  }
  const long long waiting = r.integer({"ZCARD", fmt::format("{}:{{q:default}}:waiting", ns)});
  std::this_thread::sleep_for(1s);
  long long gw_rss = 0;
  for (auto& g : gateways) gw_rss += rss_kb(g->pid());
  const double mem1 = static_cast<double>(info_field(all, "memory", "used_memory"));

  // 2. One user churning with four sessions, against an idle second.
  auto idle0 = redis_calls(all);
  auto idle_cpu0 = redis_cpu_s(all);
  std::this_thread::sleep_for(2s);
  const double idle_per_s = static_cast<double>(redis_calls(all) - idle0) / 2.0;
  const double idle_cpu_per_s = (redis_cpu_s(all) - idle_cpu0) / 2.0;
  long long churn_calls = 0;
  {
    std::filesystem::create_directories(dir / "churner");
    auto churner = std::make_unique<process>(
        self,
        std::vector<std::string>{"--client", "999", "--churn-one", "--ports", ports, "--dir",
                                 dir.string(), "--churn-seconds", "10"},
        pushonce::test::environment{}, dir.string() + "/churner");
    std::this_thread::sleep_for(1s);
    auto c0 = redis_calls(all);
    churner->kill(SIGUSR2);
    std::this_thread::sleep_for(10s);
    churn_calls = redis_calls(all) - c0;
    churner->kill(SIGTERM);
    churner->wait(5s);
  }
  const double churn_per_s = static_cast<double>(churn_calls) / 10.0;

  // 3. R resources at once.
  const double cpu0 = redis_cpu_s(all);
  const double leader_cpu0 = process_cpu_s(procs.front()->pid());
  std::vector<std::string> add{"resource", "add"};
  for (long long i = 0; i < o.resources; ++i) add.push_back(fmt::format("r{}", i));
  const long long t0 = now_ms();
  auto added = pushonce::test::run_capture(bin + "/pushonce-leader", add, env, 60s);
  if (added.exit_code != 0) {
    std::fprintf(stderr, "error: resource add: %s\n", added.err.c_str());
    return 1;
  }
  const auto assigned_key = fmt::format("{}:{{q:default}}:assigned", ns);
  const long long expected = std::min(o.resources, waiting);
  long long t_all = 0;
  for (int i = 0; i < 6000; ++i) {
    if (r.integer({"HLEN", assigned_key}) >= expected) {
      t_all = now_ms();
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(300ms);  // the workers' claims of the last batches
  const double cpu1 = redis_cpu_s(all);
  const double leader_cpu1 = process_cpu_s(procs.front()->pid());
  const double cpu_window_s = static_cast<double>(now_ms() - t0) / 1000.0;
  std::this_thread::sleep_for(3s);  // frames delivered, positions settled
  auto burst = collect(dir.string(), clients);
  // Position frames and gateway CPU from here to the last collection (the sustained phase
  // and its final positions).
  const long long frames_t0 = now_ms();
  double gw_cpu0 = 0;
  for (auto& g : gateways) gw_cpu0 += process_cpu_s(g->pid());
  long long frames0 = 0;
  for (auto& u : burst) frames0 += u.position_frames;
  std::vector<long long> lat;
  for (auto& u : burst)
    if (u.assignments > 0) lat.push_back(u.first_assignment_ms - t0);

  // 4. Sustained: --sustained-rate resources/s in chunks every 100 ms for 3 s (fewer when
  // the line runs out) while --churn-percent of the users leave and join again.
  for (auto& c : clients) c->kill(SIGUSR2);
  const long long sustained_start = now_ms();
  const long long before_sustained = r.integer({"HLEN", assigned_key});
  long long to_assign = 0;
  long long next = o.resources;
  const long long chunk = std::max(1LL, o.sustained_rate / 10);
  const long long room = std::max(0LL, (waiting - expected) * 9 / 10);
  while (now_ms() - sustained_start < 3000 && next - o.resources + chunk <= room) {
    std::vector<std::string> more{"resource", "add"};
    for (long long i = 0; i < chunk; ++i) more.push_back(fmt::format("r{}", next++));
    pushonce::test::run_capture(bin + "/pushonce-leader", more, env, 60s);
    // Chunks start every 100 ms (at once when the CLI call took longer).
    const auto slot = sustained_start + (next - o.resources) / chunk * 100;
    while (now_ms() < slot) std::this_thread::sleep_for(1ms);
  }
  to_assign = next - o.resources;
  while (r.integer({"HLEN", assigned_key}) - before_sustained < to_assign &&
         now_ms() - sustained_start < 30000)
    std::this_thread::sleep_for(5ms);
  const long long sustained_ms = now_ms() - sustained_start;
  const long long sustained = r.integer({"HLEN", assigned_key}) - before_sustained;
  // The churners stop after 5 s (back in line); then the final positions go out.
  while (now_ms() - sustained_start < 6000) std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(3s);

  // 5. Checks: exactly once, true ranks.
  auto last = collect(dir.string(), clients);
  const long long frames_ms = std::max(1LL, now_ms() - frames_t0);
  double gw_cpu1 = 0;
  for (auto& g : gateways) gw_cpu1 += process_cpu_s(g->pid());
  long long frames1 = 0;
  for (auto& u : last) frames1 += u.position_frames;
  // A session far from the head is told at most every 20 s (cadence by distance): its
  // final position may come that much after the line stops.
  std::this_thread::sleep_for(21s);
  last = collect(dir.string(), clients);
  std::map<std::string, long long> rank;
  {
    auto line = r.cmd({"ZRANGE", fmt::format("{}:{{q:default}}:waiting", ns), "0", "-1"});
    for (std::size_t i = 0; i < line->elements; ++i)
      rank[std::string(line->element[i]->str, line->element[i]->len)] =
          static_cast<long long>(i) + 1;
  }
  long long frames = 0, duplicates = 0, twice = 0, wrong = 0;
  for (auto& u : last) {
    frames += u.assignments;
    duplicates += u.duplicates;
    twice += u.assignments > 1;
    auto it = rank.find(fmt::format("u{}", u.index));
    long long want = it == rank.end() ? 0 : it->second;
    if (u.assignments == 0 && u.position != told_value(want, u.approx)) ++wrong;
  }
  const long long held = r.integer({"HLEN", assigned_key});
  const long long lost = held - frames;
  // Whether the last assignment carried a signed token (--admission-key).
  bool signed_tokens = false;
  {
    auto newest =
        r.cmd({"XREVRANGE", fmt::format("{}:{{q:default}}:outbox", ns), "+", "-", "COUNT", "1"});
    if (newest && newest->elements == 1) {
      const auto* fields = newest->element[0]->element[1];
      std::string m(fields->element[1]->str, fields->element[1]->len);
      signed_tokens = m.find(R"("admission":"ey)") != std::string::npos;
    }
  }
  if (lost != 0 || wrong != 0) {  // where: by gateway (user i is on gateway i mod G)
    std::map<std::string, long long> got;
    for (auto& u : last) got[fmt::format("u{}", u.index)] = u.assignments;
    std::vector<long long> lost_on(static_cast<std::size_t>(o.gateways)),
        wrong_on(static_cast<std::size_t>(o.gateways));
    auto holders = r.cmd({"HKEYS", assigned_key});
    for (std::size_t i = 0; i < holders->elements; ++i) {
      std::string user(holders->element[i]->str, holders->element[i]->len);
      if (got[user] == 0) ++lost_on[std::stoul(user.substr(1)) % lost_on.size()];
    }
    for (auto& u : last) {
      auto it = rank.find(fmt::format("u{}", u.index));
      if (u.assignments == 0 && u.position != (it == rank.end() ? 0 : it->second))
        ++wrong_on[static_cast<std::size_t>(u.index % o.gateways)];
    }
    for (std::size_t g = 0; g < lost_on.size(); ++g)
      std::fprintf(stderr, "gateway g%zu: %lld assignments not seen, %lld positions wrong\n", g,
                   lost_on[g], wrong_on[g]);
  }
  for (auto& c : clients) c->stop(5s);

  auto line = fmt::format(
      R"({{"users":{},"interval_ms":{},"waiting":{},"gateways":{},"workers":{},"clients":{},"batch":{},)"
      R"("join_s":{:.2f},"joins_per_s":{:.0f},"gateway_rss_kb_per_session":{:.1f},)"
      R"("redis_bytes_per_waiting_user":{:.0f},"idle_calls_per_s":{:.0f},)"
      R"("churn_calls_per_s":{:.0f},"churn_calls_per_s_above_idle":{:.0f},"resources":{},"assign_all_ms":{},)"
      R"("first_frame_ms_p50":{},"first_frame_ms_p99":{},"first_frame_ms_max":{},)"
      R"("assignments_per_s_burst":{:.0f},"redis_cpu_us_per_assignment":{:.1f},)"
      R"("leader_cpu_us_per_assignment":{:.1f},"admission_tokens":{},"sustained_assignments_per_s":{:.0f},"assigned":{},"assignment_frames":{},)"
      R"("position_frames_per_s_sustained":{:.0f},"gateway_cpu_s_sustained":{:.2f},"sustained_window_s":{:.1f},)"
      R"("duplicates":{},"users_assigned_twice":{},"lost":{},"wrong_positions":{},"unreported_clients":{}}})",
      o.users, o.interval_ms, waiting, o.gateways, o.workers, o.clients, o.batch,
      static_cast<double>(join_end - join_start) / 1000.0,
      static_cast<double>(waiting) * 1000.0 /
          static_cast<double>(std::max(1LL, join_end - join_start)),
      static_cast<double>(gw_rss) / static_cast<double>(std::max(1LL, waiting)),
      (mem1 - mem0) / static_cast<double>(std::max(1LL, waiting)), idle_per_s, churn_per_s,
      churn_per_s - idle_per_s, o.resources, t_all ? t_all - t0 : -1, percentile(lat, 0.5),
      percentile(lat, 0.99), percentile(lat, 1.0),
      static_cast<double>(expected) * 1000.0 / static_cast<double>(std::max(1LL, t_all - t0)),
      (cpu1 - cpu0 - idle_cpu_per_s * cpu_window_s) * 1e6 /
          static_cast<double>(std::max(1LL, expected)),
      (leader_cpu1 - leader_cpu0) * 1e6 / static_cast<double>(std::max(1LL, expected)),
      signed_tokens,
      to_assign ? static_cast<double>(sustained) * 1000.0 / static_cast<double>(sustained_ms) : 0.0,
      held, frames,
      static_cast<double>(frames1 - frames0) * 1000.0 / static_cast<double>(frames_ms),
      gw_cpu1 - gw_cpu0, static_cast<double>(frames_ms) / 1000.0, duplicates, twice, lost, wrong,
      unreported_clients);
  std::printf("%s\n", line.c_str());
  if (unreported_clients > 0)
    std::fprintf(stderr,
                 "%lld clients sent no report within 60 s: their users count as lost; the run "
                 "proves nothing about losses (run it again on a quieter machine)\n",
                 unreported_clients);
  std::fflush(stdout);
  const bool ok = duplicates == 0 && twice == 0 && lost == 0 && wrong == 0;
  std::error_code ec;
  if (ok)
    std::filesystem::remove_all(dir, ec);
  else
    std::fprintf(stderr, "logs kept in %s\n", dir.c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (o.client >= 0) {
    client c;
    c.o = o;
    return c.run();
  }
  return coordinate(o);
}
