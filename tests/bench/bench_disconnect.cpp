// bench_disconnect: POST /api/disconnect with revoke for many users in one burst, end to
// end (docs/protocol.md "POST /api/disconnect"). Starts two pushonce-gateway processes on
// the shared test redis-server (JWT auth), opens one session per user (user i on gateway
// i mod 2) and waits for every welcome, then sends every user's disconnect at once (one
// HTTP connection per request, spread over both gateways). It measures, per user, the time
// from its request going out to its session's close frame (1008 "disconnected"): max and
// p99, against the protocol's 1 s; then every user reconnects with its old token and must
// be refused (1008 "revoked"). Prints one JSON line; exit 0 when every session closed
// within 1 s and no revoked token was accepted.
//
//   bench_disconnect [--users N]   (default 1000)

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/jwt.hpp"
#include "core/use_tuple.hpp"
#include "tests/support/deployment.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using pushonce::use_tuple;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* disc_secret = "bench-disconnect-secret-0123456789abcdef";
constexpr const char* disc_key = "bench-disconnect-key";

struct disc_user {
  std::string token;
  clock_type::time_point sent{}, closed{};
  bool welcomed = false, closed_ok = false, answered = false;
  bool reconnect_accepted = false, reconnect_refused = false;
};

struct disc_bench {
  asio::io_context io{1};
  std::vector<tcp::endpoint> gateways;
  std::vector<disc_user> users;
  long long welcomed = 0, closed = 0, answered = 0, reconnected = 0;

  tcp::endpoint gateway_of(std::size_t i) const { return gateways[i % gateways.size()]; }

  // One session: hello, welcome, then read until the close; `reconnect`: the old token again.
  asio::awaitable<void> session(std::size_t i, bool reconnect) {
    auto& u = users[i];
    websocket::stream<tcp::socket> ws(io);
    auto [cec] = co_await ws.next_layer().async_connect(gateway_of(i), use_tuple);
    if (cec) co_return;
    auto [hec] = co_await ws.async_handshake("127.0.0.1", "/ws", use_tuple);
    if (hec) co_return;
    ws.text(true);
    auto hello = fmt::format(R"({{"op":"hello","token":"{}"}})", u.token);
    auto [wec, wn] = co_await ws.async_write(asio::buffer(hello), use_tuple);
    if (wec) co_return;
    beast::flat_buffer buf;
    for (;;) {
      auto [rec, n] = co_await ws.async_read(buf, use_tuple);
      if (rec) {
        auto reason = ws.reason();
        if (reconnect) {
          u.reconnect_refused =
              reason.code == 1008 &&
              std::string(reason.reason.data(), reason.reason.size()) == "revoked";
          ++reconnected;
        } else {
          u.closed = clock_type::now();
          u.closed_ok = reason.code == 1008 &&
                        std::string(reason.reason.data(), reason.reason.size()) == "disconnected";
          ++closed;
        }
        co_return;
      }
      auto f = beast::buffers_to_string(buf.data());
      buf.consume(n);
      if (f.find(R"("type":"welcome")") != std::string::npos) {
        if (reconnect) {
          u.reconnect_accepted = true;
          ++reconnected;
          co_return;
        }
        u.welcomed = true;
        ++welcomed;
      }
    }
  }

  asio::awaitable<void> disconnect(std::size_t i) {
    auto& u = users[i];
    tcp::socket sock(io);
    auto [cec] = co_await sock.async_connect(gateway_of(i + 1), use_tuple);
    if (cec) co_return;
    http::request<http::string_body> req{http::verb::post, "/api/disconnect", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::authorization, std::string("Bearer ") + disc_key);
    req.set(http::field::content_type, "application/json");
    req.body() = fmt::format(R"({{"user":"u{}","revoke":true}})", i);
    req.prepare_payload();
    u.sent = clock_type::now();
    auto [wec, wn] = co_await http::async_write(sock, req, use_tuple);
    if (wec) co_return;
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    auto [rec, rn] = co_await http::async_read(sock, buf, res, use_tuple);
    if (!rec && res.result_int() == 200) {
      u.answered = true;
      ++answered;
    }
  }

  template <class Pred>
  bool run_until(Pred done, std::chrono::seconds limit) {
    auto deadline = clock_type::now() + limit;
    while (!done() && clock_type::now() < deadline) {
      if (io.stopped()) io.restart();  // out of work after an earlier phase
      io.run_for(20ms);
    }
    return done();
  }
};

}  // namespace

int main(int argc, char** argv) {
  long long n = 1000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--users") == 0) n = std::atoll(argv[i + 1]);
  if (n < 1 || n > 20000) {
    std::fprintf(stderr, "usage: bench_disconnect [--users N] (1..20000)\n");
    return 2;
  }
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  pushonce::test::deployment d(
      "bench", "disconnect",
      {{"PUSHONCE_JWT_SECRET", disc_secret}, {"PUSHONCE_API_KEY", disc_key}});
  disc_bench b;
  for (int g = 0; g < 2; ++g) {
    auto& p = d.start_gateway({"--max-connections-per-ip", "0", "--max-sessions-per-ip", "0"});
    b.gateways.emplace_back(asio::ip::make_address("127.0.0.1"), d.port_of(p));
  }
  if (!d.wait_ready() || !d.wait_subscribers(d.k().plain("control"), 2)) {
    std::fprintf(stderr, "gateways not ready: %s\n", d.ready_failure().c_str());
    return 1;
  }
  const auto users = static_cast<std::size_t>(n);
  b.users.resize(users);
  for (std::size_t i = 0; i < users; ++i)
    b.users[i].token = pushonce::jwt::mint(fmt::format("u{}", i), 3600s, disc_secret);
  for (std::size_t i = 0; i < users; ++i) asio::co_spawn(b.io, b.session(i, false), asio::detached);
  if (!b.run_until([&] { return b.welcomed == n; }, 60s)) {
    std::fprintf(stderr, "only %lld of %lld sessions welcomed\n", b.welcomed, n);
    return 1;
  }
  const auto burst = clock_type::now();
  for (std::size_t i = 0; i < users; ++i) asio::co_spawn(b.io, b.disconnect(i), asio::detached);
  b.run_until([&] { return b.closed == n && b.answered == n; }, 30s);
  const auto burst_end = clock_type::now();

  std::vector<double> lat;
  long long closed_ok = 0;
  for (auto& u : b.users) {
    if (!u.closed_ok) continue;
    ++closed_ok;
    lat.push_back(std::chrono::duration<double, std::milli>(u.closed - u.sent).count());
  }
  std::sort(lat.begin(), lat.end());
  double max = lat.empty() ? 0 : lat.back();
  double p99 = lat.empty() ? 0 : lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
  double p50 = lat.empty() ? 0 : lat[lat.size() / 2];
  double all_closed_ms = 0;
  for (auto& u : b.users)
    if (u.closed_ok)
      all_closed_ms = std::max(all_closed_ms,
                               std::chrono::duration<double, std::milli>(u.closed - burst).count());
  (void)burst_end;

  // Every user again with its old token: each must be refused.
  for (std::size_t i = 0; i < users; ++i) asio::co_spawn(b.io, b.session(i, true), asio::detached);
  b.run_until([&] { return b.reconnected == n; }, 60s);
  long long accepted = 0, refused = 0;
  for (auto& u : b.users) {
    accepted += u.reconnect_accepted;
    refused += u.reconnect_refused;
  }
  const bool ok = closed_ok == n && max <= 1000 && accepted == 0 && refused == n;
  std::printf(
      "{\"users\":%lld,\"answered\":%lld,\"closed_disconnected\":%lld,\"close_ms_p50\":%.1f,"
      "\"close_ms_p99\":%.1f,\"close_ms_max\":%.1f,\"burst_to_last_close_ms\":%.1f,"
      "\"reconnect_accepted\":%lld,\"reconnect_refused_revoked\":%lld,\"ok\":%s}\n",
      n, b.answered, closed_ok, p50, p99, max, all_closed_ms, accepted, refused,
      ok ? "true" : "false");
  return ok ? 0 : 1;
}
