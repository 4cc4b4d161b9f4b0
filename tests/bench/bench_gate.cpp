// bench_gate: GET /api/gate (docs/operations.md "Protecting a checkout") on one gateway thread.
// Starts a leader (with an admission key), a worker and `pushonce-gateway --threads 1` on the
// shared test redis-server, admits one user (its token as the gate cookie), then C client threads,
// each on one keep-alive connection, check the token for D seconds. Prints one JSON line: checks
// per second, latency p50/p99 (µs), the gateway's CPU per check (µs, from /proc/PID/stat),
// Redis commands (INFO commandstats: the whole server's during the run, its idle rate, and
// the gate's share per second and per check), and how many answers were not 204. Exit 0 when every
// answer was 204.
//
//   bench_gate [--clients C] [--seconds D]   (defaults 4, 5)

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/admission_keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/ws_client.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using namespace std::chrono_literals;

// utime + stime of a process, in clock ticks.
long long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return utime + stime;
}

// The calls of every command the server has run (INFO commandstats).
long long redis_calls(pushonce::test::sync_redis& r) {
  auto text = r.text({"INFO", "commandstats"});
  long long total = 0;
  std::size_t at = 0;
  while ((at = text.find("calls=", at)) != std::string::npos) {
    at += 6;
    total += std::atoll(text.c_str() + at);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  int clients = 4;
  int seconds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--clients") == 0) clients = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::max(1, std::atoi(argv[i + 1]));
  }
  pushonce::test::temp_dir dir("pushonce-bench-gate");
  {
    std::ofstream out(dir.file("key.pem"), std::ios::binary);
    out << pushonce::test::new_p256_private_pem();
  }
  pushonce::test::deployment d("bench", "gate");
  d.start_leader({"--admission-key", dir.file("key.pem")});
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth", "--threads", "1", "--admission-key",
                              dir.file("key.pem"), "--max-connections-per-ip", "0"});
  const auto port = d.port_of(gw);
  if (!d.wait_ready()) {
    std::fprintf(stderr, "not ready: %s\n", d.ready_failure().c_str());
    return 1;
  }
  d.admin({"settings", "--session", "600"});
  d.admin({"resource", "add", "seat-1"});
  pushonce::test::ws_client ws;
  ws.connect("127.0.0.1", port, "/ws");
  ws.send(pushonce::test::hello_frame("bench"));
  ws.send(R"({"op":"join"})");
  std::string token;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (token.empty() && std::chrono::steady_clock::now() < until) {
    auto f = ws.receive(100ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (pushonce::test::str_field(o, "kind") == "assignment")
      token = pushonce::test::str_field(o.at("data").as_object(), "admission");
  }
  if (token.empty()) {
    std::fprintf(stderr, "no admission\n%s\n", d.digest().c_str());
    return 1;
  }

  std::atomic<bool> stop{false};
  std::atomic<long long> refused{0};
  std::vector<std::vector<long long>> latencies(clients);
  auto client = [&](int c) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    beast::flat_buffer buf;
    // A keep-alive connection serves --http-max-requests (1000) requests: then a new one.
    auto reconnect = [&] {
      boost::system::error_code ignored;
      s.close(ignored);
      s.connect({asio::ip::make_address("127.0.0.1"), port});
      buf.clear();
    };
    reconnect();
    http::request<http::empty_body> req{http::verb::get, "/api/gate?queue=default", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::cookie, "pushonce_admission=" + token);
    req.keep_alive(true);
    while (!stop) {
      const auto t0 = std::chrono::steady_clock::now();
      http::response<http::string_body> res;
      boost::system::error_code ec;
      http::write(s, req, ec);
      if (!ec) http::read(s, buf, res, ec);
      if (ec) {
        reconnect();
        continue;
      }
      latencies[c].push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - t0)
                                 .count());
      if (res.result_int() != 204) ++refused;
      if (!res.keep_alive()) reconnect();
    }
  };
  // A warm-up second (the token verified once, the state read), then the measured run.
  {
    std::vector<std::thread> warm;
    for (int c = 0; c < clients; ++c) warm.emplace_back(client, c);
    std::this_thread::sleep_for(1s);
    stop = true;
    for (auto& t : warm) t.join();
    stop = false;
    for (auto& l : latencies) l.clear();
    refused = 0;
  }
  // The deployment's own Redis traffic (heartbeats, ticks) over 2 idle seconds: the
  // gate's share is what the run adds to it.
  const long long idle0 = redis_calls(d.redis());
  std::this_thread::sleep_for(2s);
  const double idle_per_s = static_cast<double>(redis_calls(d.redis()) - idle0 - 1) / 2.0;
  const long long calls0 = redis_calls(d.redis());
  const long long cpu0 = cpu_ticks(gw.pid());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) threads.emplace_back(client, c);
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long long cpu = cpu_ticks(gw.pid()) - cpu0;
  const long long calls = redis_calls(d.redis()) - calls0 - 1;  // less this INFO
  std::vector<long long> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const auto n = static_cast<long long>(all.size());
  auto pct = [&](double p) { return n ? all[static_cast<std::size_t>(p * (n - 1))] : 0; };
  const double cpu_us = static_cast<double>(cpu) * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::printf("%s\n",
              fmt::format(R"({{"checks":{},"checks_per_s":{:.0f},"p50_us":{},"p99_us":{},)"
                          R"("gateway_cpu_us_per_check":{:.1f},"redis_calls":{},)"
                          R"("redis_calls_per_s_idle":{:.1f},"redis_calls_per_s_gate":{:.1f},)"
                          R"("redis_calls_per_check":{:.5f},"not_204":{},"clients":{}}})",
                          n, n / elapsed, pct(0.5), pct(0.99), n ? cpu_us / n : 0.0, calls,
                          idle_per_s, std::max(0.0, calls / elapsed - idle_per_s),
                          n ? std::max(0.0, calls - idle_per_s * elapsed) / n : 0.0, refused.load(),
                          clients)
                  .c_str());
  return refused == 0 ? 0 : 1;
}
