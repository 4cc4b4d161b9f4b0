// bench_delivery: end-to-end delivery through the whole system.
//
// Starts a private redis-server, W pushonce-worker and G pushonce-gateway (--dev-auth)
// processes, connects M WebSocket users (user i on gateway i mod G, one thread each),
// then publishes a burst of N custom messages round-robin to the users through
// core/publisher.hpp (pipelined chunks) and waits until every frame arrived. Each message
// carries its publish time (µs since the epoch), so publish → receive latency is measured
// on the receiving side.
//
//   bench_delivery [--messages N] [--users M] [--gateways G] [--workers W] [--rate R]
//
// Without --rate the N messages are one burst (latency then measures queueing); with
// --rate R they are published at R messages/s in chunks every 10 ms.
//
// Prints delivered/s, latency p50/p90/p99/max, duplicates and losses (both must be 0),
// one summary line and one JSON line; exit 0 when nothing was lost or duplicated.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "core/publisher.hpp"
#include "core/redis/connection.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/ws_client.hpp"

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

struct options {
  long long messages = 10000;
  long long users = 100;
  long long gateways = 1;
  long long workers = 3;
  long long chunk = 500;
  long long rate = 0;  // messages/s; 0: one burst as fast as possible
};

long long now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    long long v = std::atoll(argv[i + 1]);
    if (v <= 0) {
      std::fprintf(stderr, "error: %s needs a positive integer\n", a.c_str());
      std::exit(2);
    }
    if (a == "--messages")
      o.messages = v;
    else if (a == "--users")
      o.users = v;
    else if (a == "--gateways")
      o.gateways = v;
    else if (a == "--workers")
      o.workers = v;
    else if (a == "--chunk")
      o.chunk = v;
    else if (a == "--rate")
      o.rate = v;
    else {
      std::fprintf(stderr,
                   "usage: bench_delivery [--messages N] [--users M] [--gateways G] [--workers W] "
                   "[--rate R]\n");
      std::exit(2);
    }
  }
  return o;
}

struct receiver {
  std::string user;
  std::uint16_t port = 0;
  pushonce::test::ws_client ws;
  std::vector<long long> latency_us;
  std::set<std::string> ids;
  long long duplicates = 0, frames = 0, offset_errors = 0, last_offset = 0;
  long long last_receive_us = 0;
};

void receive_loop(receiver& r, long long expected, std::atomic<bool>& give_up) {
  while (static_cast<long long>(r.ids.size()) < expected && !give_up) {
    auto frame = r.ws.receive(500ms);
    if (!frame) {
      if (r.ws.closed()) break;
      continue;
    }
    auto t = now_us();
    boost::system::error_code ec;
    auto v = json::parse(*frame, ec);
    if (ec || !v.is_object() || v.as_object().at("type") != "message") continue;
    auto& o = v.as_object();
    ++r.frames;
    std::string id(o.at("id").as_string());
    if (!r.ids.insert(id).second) ++r.duplicates;
    auto offset = o.at("offset").to_number<long long>();
    if (offset != r.last_offset + 1) ++r.offset_errors;
    r.last_offset = offset;
    r.latency_us.push_back(t - o.at("data").as_object().at("t").to_number<long long>());
    r.last_receive_us = t;
  }
}

long long percentile(std::vector<long long>& v, double p) {
  if (v.empty()) return 0;
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  auto opt = parse(argc, argv);
  pushonce::test::redis_server redis;
  const std::string ns = "bench";
  pushonce::test::environment env{
      {"PUSHONCE_REDIS", redis.url()}, {"PUSHONCE_NAMESPACE", ns}, {"PUSHONCE_LOG_LEVEL", "warn"}};
  std::string bin = PUSHONCE_BIN_DIR;
  std::vector<std::unique_ptr<pushonce::test::process>> procs;
  for (long long i = 0; i < opt.workers; ++i)
    procs.push_back(std::make_unique<pushonce::test::process>(
        bin + "/pushonce-worker", std::vector<std::string>{"--id", fmt::format("w{}", i)}, env));
  std::vector<std::uint16_t> ports;
  for (long long i = 0; i < opt.gateways; ++i) {
    auto port = pushonce::test::free_port();
    ports.push_back(port);
    procs.push_back(std::make_unique<pushonce::test::process>(
        bin + "/pushonce-gateway",
        std::vector<std::string>{"--listen", fmt::format("127.0.0.1:{}", port), "--dev-auth",
                                 "--id", fmt::format("g{}", i)},
        env));
  }
  // Connect every user (retrying while the gateways start), hello, wait for welcome.
  std::vector<std::unique_ptr<receiver>> rs;
  for (long long u = 0; u < opt.users; ++u) {
    auto r = std::make_unique<receiver>();
    r->user = fmt::format("u{}", u);
    r->port = ports[static_cast<std::size_t>(u % opt.gateways)];
    for (int attempt = 0;; ++attempt) {
      try {
        r->ws.connect("127.0.0.1", r->port);
        break;
      } catch (const std::exception& e) {
        if (attempt > 100) throw;
        std::this_thread::sleep_for(50ms);
      }
    }
    r->ws.send(fmt::format(R"({{"op":"hello","user":"{}"}})", r->user));
    auto welcome = r->ws.receive(5s);
    if (!welcome || welcome->find("welcome") == std::string::npos) {
      std::fprintf(stderr, "error: no welcome for %s\n", r->user.c_str());
      return 1;
    }
    rs.push_back(std::move(r));
  }
  std::this_thread::sleep_for(1s);  // let every worker subscribe to the bus

  std::atomic<bool> give_up{false};
  long long per_user = opt.messages / opt.users;
  long long total = per_user * opt.users;
  std::vector<std::thread> threads;
  for (auto& r : rs)
    threads.emplace_back([&, p = r.get()] { receive_loop(*p, per_user, give_up); });

  asio::io_context io;
  pushonce::redis::connection_options co;
  co.where = pushonce::redis::endpoint::parse(redis.url());
  auto conn = pushonce::redis::connection::create(io.get_executor(), co);
  conn->start();
  pushonce::publisher pub(conn, pushonce::keys(ns));
  long long start_us = now_us(), publish_failures = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        long long chunk = opt.rate ? std::max(1LL, opt.rate / 100) : opt.chunk;
        asio::steady_timer pace(io);
        auto t0 = std::chrono::steady_clock::now();
        for (long long sent = 0; sent < total;) {
          if (opt.rate) {  // the time `sent` messages are due at
            pace.expires_at(t0 + std::chrono::microseconds(sent * 1000000 / opt.rate));
            co_await pace.async_wait(asio::use_awaitable);
          }
          std::vector<pushonce::publish_request> batch;
          for (long long i = 0; i < chunk && sent < total; ++i, ++sent) {
            auto user = fmt::format("u{}", sent % opt.users);
            batch.push_back(
                {user, fmt::format(R"({{"seq":{},"t":{}}})", sent, now_us()), std::nullopt});
          }
          auto results = co_await pub.publish_batch(std::move(batch));
          for (auto& x : results) publish_failures += x.has_value() ? 0 : 1;
        }
        conn->stop();
      },
      asio::detached);
  io.run();
  long long published_us = now_us();

  std::thread watchdog([&] {
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < deadline && !give_up)
      std::this_thread::sleep_for(100ms);
    give_up = true;
  });
  for (auto& t : threads) t.join();
  give_up = true;
  watchdog.join();

  std::vector<long long> lat;
  long long received = 0, dups = 0, offset_errors = 0, last = start_us;
  for (auto& r : rs) {
    lat.insert(lat.end(), r->latency_us.begin(), r->latency_us.end());
    received += static_cast<long long>(r->ids.size());
    dups += r->duplicates;
    offset_errors += r->offset_errors;
    last = std::max(last, r->last_receive_us);
  }
  std::sort(lat.begin(), lat.end());
  long long lost = total - received;
  double seconds = static_cast<double>(last - start_us) / 1e6;
  double rate = static_cast<double>(received) / seconds;
  auto ms = [](long long us) { return static_cast<double>(us) / 1000.0; };
  std::printf(
      "bench_delivery: messages %lld users %lld gateways %lld workers %lld rate %lld | publish "
      "%.3f s | "
      "all received after %.3f s | delivered/s %.0f | latency ms p50 %.1f p90 %.1f p99 %.1f "
      "max %.1f | duplicates %lld lost %lld offset errors %lld | %s\n",
      total, opt.users, opt.gateways, opt.workers, opt.rate,
      static_cast<double>(published_us - start_us) / 1e6, seconds, rate, ms(percentile(lat, 0.5)),
      ms(percentile(lat, 0.9)), ms(percentile(lat, 0.99)), ms(lat.empty() ? 0 : lat.back()), dups,
      lost, offset_errors, dups == 0 && lost == 0 && publish_failures == 0 ? "OK" : "FAILED");
  json::object o{{"bench", "delivery"},
                 {"messages", total},
                 {"users", opt.users},
                 {"gateways", opt.gateways},
                 {"workers", opt.workers},
                 {"rate", opt.rate},
                 {"seconds", seconds},
                 {"delivered_per_s", rate},
                 {"p50_ms", ms(percentile(lat, 0.5))},
                 {"p90_ms", ms(percentile(lat, 0.9))},
                 {"p99_ms", ms(percentile(lat, 0.99))},
                 {"max_ms", ms(lat.empty() ? 0 : lat.back())},
                 {"duplicates", dups},
                 {"lost", lost},
                 {"offset_errors", offset_errors},
                 {"publish_failures", publish_failures}};
  std::printf("%s\n", json::serialize(o).c_str());
  for (auto& r : rs) r->ws.close();
  for (auto& p : procs) p->stop(std::chrono::seconds(5));
  return dups == 0 && lost == 0 && publish_failures == 0 ? 0 : 1;
}
