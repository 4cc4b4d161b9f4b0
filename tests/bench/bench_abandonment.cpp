// bench_abandonment: abandonment (docs/protocol.md "Waiting room controls") at scale, end
// to end. Starts a private redis-server, one pushonce-leader and G gateways (--dev-auth),
// opens N WebSocket sessions (user i on gateway i mod G) that join the queue, sets the
// queue's abandon_after_s, then for --churn-s seconds every second:
//   - --leave-per-s users close their session for good (ghosts), and
//   - --flap-per-s other users close theirs and open a new one at once (present users).
// It measures:
//   - Redis calls/s during the churn against an idle window before it (INFO commandstats:
//     top-level EVALSHA calls, and every command with those run inside scripts), set
//     against the session opens + closes/s: a presence call is one script per open or
//     close plus the leader's sweep, whose cost does not grow with the users;
//   - for every ghost, the time from its close to its removal from the waiting list
//     (polled every 100 ms): max and p99, against abandon_after_s + 5 s;
//   - that every present user (the flapping ones included) is still waiting at the end.
// Prints one JSON line; exit 0 when every ghost left in time and no present user did.
//
//   bench_abandonment [--users N] [--gateways G] [--abandon-after S] [--churn-s D]
//                     [--leave-per-s L] [--flap-per-s F]

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/use_tuple.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using pushonce::use_tuple;
using pushonce::test::process;
using namespace std::chrono_literals;

struct abandon_bench_options {
  long long users = 10000, gateways = 2, abandon_after = 5, churn_s = 30, leave_per_s = 20,
            flap_per_s = 20;
};

long long abandon_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

abandon_bench_options parse_abandon_options(int argc, char** argv) {
  abandon_bench_options o;
  std::map<std::string, long long*> named{{"--users", &o.users},
                                          {"--gateways", &o.gateways},
                                          {"--abandon-after", &o.abandon_after},
                                          {"--churn-s", &o.churn_s},
                                          {"--leave-per-s", &o.leave_per_s},
                                          {"--flap-per-s", &o.flap_per_s}};
  for (int i = 1; i + 1 < argc; i += 2) {
    auto it = named.find(argv[i]);
    if (it == named.end()) {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      std::exit(2);
    }
    *it->second = std::atoll(argv[i + 1]);
  }
  return o;
}

// One session of a user: hello (and join, the first time), then it reads until told to go.
struct abandon_session {
  std::shared_ptr<websocket::stream<tcp::socket>> ws;  // the coroutine holds it too
  bool ready = false;
  bool failed = false;
};

struct abandon_clients {
  asio::io_context io{1};
  std::vector<tcp::endpoint> gateways;
  std::vector<abandon_session> sessions;
  long long ready = 0, failed = 0;

  asio::awaitable<void> open(long long i, bool join) {
    auto& s = sessions[static_cast<std::size_t>(i)];
    s.ready = false;
    auto keep = std::make_shared<websocket::stream<tcp::socket>>(io);
    s.ws = keep;
    auto& ws = *keep;
    auto& sock = ws.next_layer();
    boost::system::error_code ec;
    sock.open(tcp::v4(), ec);
    int one = 1;
    ::setsockopt(sock.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sock.bind({asio::ip::make_address_v4(fmt::format("127.0.0.{}", 2 + (i / 20000) % 250)), 0}, ec);
    auto ep = gateways[static_cast<std::size_t>(i) % gateways.size()];
    auto [cec] = co_await sock.async_connect(ep, use_tuple);
    if (cec) co_return fail(s);
    auto [hec] = co_await ws.async_handshake("127.0.0.1", "/ws", use_tuple);
    if (hec) co_return fail(s);
    ws.text(true);
    auto hello = fmt::format(R"({{"op":"hello","user":"u{}"}})", i);
    co_await ws.async_write(asio::buffer(hello), use_tuple);
    if (join) {
      std::string j = R"({"op":"join"})";
      co_await ws.async_write(asio::buffer(j), use_tuple);
    }
    beast::flat_buffer buf;
    for (;;) {
      auto [rec, n] = co_await ws.async_read(buf, use_tuple);
      if (rec) co_return;
      auto f = beast::buffers_to_string(buf.data());
      buf.consume(n);
      bool done = join ? f.find(R"("type":"joined")") != std::string::npos
                       : f.find(R"("type":"welcome")") != std::string::npos;
      if (done && !s.ready) {
        s.ready = true;
        ++ready;
      }
    }
  }
  void fail(abandon_session& s) {
    s.failed = true;
    ++failed;
  }
  void close(long long i) {
    auto& s = sessions[static_cast<std::size_t>(i)];
    if (!s.ws) return;
    boost::system::error_code ec;
    s.ws->next_layer().shutdown(tcp::socket::shutdown_both, ec);
    s.ws->next_layer().close(ec);
  }
};

long long abandon_info_calls(pushonce::test::sync_redis& r, const std::string& only = "") {
  auto info = r.text({"INFO", "commandstats"});
  long long total = 0;
  for (std::size_t at = 0; (at = info.find("cmdstat_", at)) != std::string::npos; ++at) {
    auto colon = info.find(':', at);
    auto name = info.substr(at + 8, colon - at - 8);
    auto calls = info.find("calls=", colon);
    if (only.empty() || name == only) total += std::atoll(info.c_str() + calls + 6);
  }
  return total;
}

std::uint16_t abandon_listen_port(long long i) {
  for (int base = 21000 + static_cast<int>(getpid() % 400) * 16 + static_cast<int>(i); base < 32000;
       base += 997) {
    asio::io_context io;
    tcp::acceptor a(io);
    boost::system::error_code ec;
    a.open(tcp::v4(), ec);
    a.bind({asio::ip::address_v4::any(), static_cast<unsigned short>(base)}, ec);
    if (!ec) return static_cast<std::uint16_t>(base);
  }
  throw std::runtime_error("no free port");
}

}  // namespace

int main(int argc, char** argv) {
  auto o = parse_abandon_options(argc, argv);
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  pushonce::test::redis_server redis;
  pushonce::test::sync_redis r(redis.port());
  const std::string ns = "bench", bin = PUSHONCE_BIN_DIR;
  pushonce::test::environment env{
      {"PUSHONCE_REDIS", redis.url()}, {"PUSHONCE_NAMESPACE", ns}, {"PUSHONCE_LOG_LEVEL", "warn"}};
  std::vector<std::unique_ptr<process>> procs;
  procs.push_back(
      std::make_unique<process>(bin + "/pushonce-leader", std::vector<std::string>{"run"}, env));
  abandon_clients c;
  for (long long g = 0; g < o.gateways; ++g) {
    auto port = abandon_listen_port(g);
    procs.push_back(std::make_unique<process>(
        bin + "/pushonce-gateway",
        std::vector<std::string>{"--listen", fmt::format("0.0.0.0:{}", port), "--dev-auth", "--id",
                                 fmt::format("g{}", g), "--max-connections-per-ip", "0",
                                 "--max-sessions-per-ip", "0"},
        env));
    c.gateways.emplace_back(asio::ip::make_address_v4("127.0.0.1"), port);
  }
  auto registered = ns + ":{q:default}:registered";
  for (int i = 0; i < 200 && r.integer({"EXISTS", registered}) != 1; ++i)
    std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(500ms);
  const std::string settings = ns + ":{q:default}:settings", waiting = ns + ":{q:default}:waiting";
  r.cmd({"HSET", settings, "abandon_after_s", std::to_string(o.abandon_after)});

  // Everyone connects and joins.
  c.sessions.resize(static_cast<std::size_t>(o.users));
  const long long t_join = abandon_now_ms();
  for (long long i = 0; i < o.users; ++i) asio::co_spawn(c.io, c.open(i, true), asio::detached);
  std::thread io_thread;
  auto pump_until = [&](auto pred, std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!pred() && std::chrono::steady_clock::now() < until) c.io.run_for(20ms);
    return pred();
  };
  bool all_in = pump_until([&] { return c.ready + c.failed >= o.users; }, 180s);
  const long long join_ms = abandon_now_ms() - t_join;
  std::fprintf(stderr, "%lld joined in %lld ms (%lld failed)\n", c.ready, join_ms, c.failed);
  if (!all_in || c.failed) return 1;

  // Idle window: the leader's sweep and the background loops, nobody coming or going.
  pump_until([] { return false; }, 2s);
  auto idle_calls0 = abandon_info_calls(r), idle_eval0 = abandon_info_calls(r, "evalsha");
  pump_until([] { return false; }, 10s);
  const double idle_calls = static_cast<double>(abandon_info_calls(r) - idle_calls0) / 10.0;
  const double idle_eval =
      static_cast<double>(abandon_info_calls(r, "evalsha") - idle_eval0) / 10.0;

  // Churn: ghosts leave for good, present users reconnect. Ghosts still waiting are polled
  // every 100 ms (ZSCORE each), during the churn and after it.
  std::map<long long, long long> ghost_closed;  // user -> close ms
  std::map<long long, long long> pending;       // ghosts not out yet
  std::vector<long long> delays;
  auto poll_ghosts = [&] {  // one ZMSCORE for all of them: ~10 calls/s of the bench's own
    if (pending.empty()) return;
    std::vector<std::string> ask{"ZMSCORE", waiting};
    std::vector<long long> who;
    for (auto& [u, at] : pending) {
      ask.push_back(fmt::format("u{}", u));
      who.push_back(u);
    }
    auto rep = r.cmd(ask);
    const long long now = abandon_now_ms();
    for (std::size_t i = 0; i < who.size() && i < rep->elements; ++i)
      if (rep->element[i]->type == REDIS_REPLY_NIL) {
        delays.push_back(now - pending[who[i]]);
        pending.erase(who[i]);
      }
  };
  auto pump_polling = [&](std::chrono::milliseconds d) {
    auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      c.io.run_for(100ms);
      poll_ghosts();
    }
  };
  long long next = 0, opens = 0, closes = 0;
  const long long flap_from = o.users / 2;  // flapping users: the second half, in turn
  long long flap_next = flap_from;
  auto calls0 = abandon_info_calls(r), eval0 = abandon_info_calls(r, "evalsha");
  const auto churn_start = std::chrono::steady_clock::now();
  for (long long sec = 0; sec < o.churn_s; ++sec) {
    for (long long k = 0; k < o.leave_per_s && next < flap_from; ++k, ++next) {
      c.close(next);
      ghost_closed[next] = pending[next] = abandon_now_ms();
      ++closes;
    }
    for (long long k = 0; k < o.flap_per_s; ++k) {
      c.close(flap_next);
      asio::co_spawn(c.io, c.open(flap_next, false), asio::detached);
      ++closes;
      ++opens;
      if (++flap_next >= o.users) flap_next = flap_from;
    }
    pump_polling(std::chrono::duration_cast<std::chrono::milliseconds>(
        churn_start + std::chrono::seconds(sec + 1) - std::chrono::steady_clock::now()));
  }
  const double churn_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - churn_start).count();
  const double calls = static_cast<double>(abandon_info_calls(r) - calls0) / churn_s;
  const double evals = static_cast<double>(abandon_info_calls(r, "evalsha") - eval0) / churn_s;
  const double ops = static_cast<double>(opens + closes) / churn_s;
  // Every reopened session also runs session.lua for its hello (not presence).
  const double presence_evals = evals - idle_eval - static_cast<double>(opens) / churn_s;

  // Every ghost out.
  const long long limit_ms = (o.abandon_after + 5) * 1000;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms + 10000);
  while (!pending.empty() && std::chrono::steady_clock::now() < deadline) pump_polling(100ms);
  std::sort(delays.begin(), delays.end());
  long long present_lost = 0;
  for (long long i = flap_from; i < o.users; ++i)
    if (r.cmd({"ZSCORE", waiting, fmt::format("u{}", i)})->type == REDIS_REPLY_NIL) ++present_lost;
  auto abandoned = r.text({"HGET", ns + ":{q:default}:stats", "abandoned"});
  long long max_ms = delays.empty() ? -1 : delays.back();
  long long p99 = delays.empty() ? -1 : delays[(delays.size() - 1) * 99 / 100];
  bool ok = pending.empty() && max_ms <= limit_ms && present_lost == 0 && presence_evals <= 2 * ops;
  std::printf(
      "{\"users\":%lld,\"gateways\":%lld,\"abandon_after_s\":%lld,\"join_ms\":%lld,"
      "\"idle_calls_per_s\":%.1f,\"idle_evalsha_per_s\":%.1f,\"churn_s\":%.1f,"
      "\"opens_closes_per_s\":%.1f,\"calls_per_s\":%.1f,\"evalsha_per_s\":%.1f,"
      "\"presence_evalsha_per_s\":%.1f,\"ratio_to_opens_closes\":%.2f,"
      "\"calls_per_s_all_minus_idle\":%.1f,"
      "\"ghosts\":%zu,\"ghosts_left_over\":%zu,\"ghost_out_max_ms\":%lld,\"ghost_out_p99_ms\":%lld,"
      "\"limit_ms\":%lld,\"present_lost\":%lld,\"abandoned\":\"%s\",\"ok\":%s}\n",
      o.users, o.gateways, o.abandon_after, join_ms, idle_calls, idle_eval, churn_s, ops, calls,
      evals, presence_evals, presence_evals / ops, calls - idle_calls, ghost_closed.size(),
      pending.size(), max_ms, p99, limit_ms, present_lost, abandoned.c_str(),
      ok ? "true" : "false");
  std::fflush(stdout);
  for (auto& p : procs) p->stop(5s);
  return ok ? 0 : 1;
}
