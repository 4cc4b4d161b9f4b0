// bench_claims: claim/deliver throughput of W pushonce-worker processes.
//
// Starts a private redis-server and W workers (all subscribed before anything is
// published), publishes N custom messages to U users through core/publisher.hpp
// (publish_batch, pipelined chunks of 1000 — the same path as `pushonce-leader publish`),
// and measures the time from the first publish until NS:stats delivered == N (polled
// every 10 ms). Then checks for duplicates: the inboxes hold N entries in total and no
// message id twice, and every published id is there.
//
//   bench_claims [--messages N] [--workers W] [--concurrency C] [--users U]
//                [--timeout SECONDS] [--trace | --no-trace]
//
// Each worker claims and delivers a whole bus payload (one publish.lua batch per shard)
// with one claim.lua call (worker/claim_client.hpp, built by core/lua/claim.hpp).
// Workers run without their per-event trace unless --trace is given (--no-trace, the
// default now, is kept for old command lines).
//
// Prints one summary line and one JSON line; exit 0 when every check passed.
// Note: workers flush their counters every 100 ms, so times have that granularity.

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/keys.hpp"
#include "core/publisher.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
  long long messages = 20000;
  int workers = 1;
  long long concurrency = 64;
  long long users = 1000;
  long long chunk = 1000;
  std::chrono::seconds timeout{300};
  bool trace = false;  // --trace: workers run with --trace (per-event detail)
};

[[noreturn]] void usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "error: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: bench_claims [--messages N] [--workers W] [--concurrency C] "
               "[--users U] [--timeout SECONDS] [--trace | --no-trace]\n");
  std::exit(why.empty() ? 0 : 2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") usage("");
    if (a == "--no-trace" || a == "--trace") {
      o.trace = a == "--trace";
      continue;
    }
    if (i + 1 >= argc) usage("missing value after " + a);
    long long v = 0;
    try {
      std::size_t used = 0;
      v = std::stoll(argv[i + 1], &used);
      if (used != std::strlen(argv[i + 1]) || v <= 0) throw std::invalid_argument("");
    } catch (...) {
      usage(a + " needs a positive integer");
    }
    ++i;
    if (a == "--messages")
      o.messages = v;
    else if (a == "--workers")
      o.workers = static_cast<int>(v);
    else if (a == "--concurrency")
      o.concurrency = v;
    else if (a == "--users")
      o.users = v;
    else if (a == "--timeout")
      o.timeout = std::chrono::seconds(v);
    else
      usage("unknown option " + a);
  }
  return o;
}

double seconds_since(clock_type::time_point t0, clock_type::time_point t) {
  return std::chrono::duration<double>(t - t0).count();
}

struct reply_free {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_free>;

class sync_redis {
 public:
  explicit sync_redis(std::uint16_t port) {
    timeval tv{10, 0};
    ctx_ = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (ctx_ == nullptr || ctx_->err) throw std::runtime_error("cannot connect to redis");
    redisSetTimeout(ctx_, tv);
  }
  ~sync_redis() { redisFree(ctx_); }
  sync_redis(const sync_redis&) = delete;
  sync_redis& operator=(const sync_redis&) = delete;

  void append(const std::vector<std::string>& words) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (auto& w : words) {
      argv.push_back(w.data());
      lens.push_back(w.size());
    }
    if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
        REDIS_OK)
      throw std::runtime_error("redis: " + std::string(ctx_->errstr));
  }
  reply_ptr next() {
    void* r = nullptr;
    if (redisGetReply(ctx_, &r) != REDIS_OK || r == nullptr)
      throw std::runtime_error("redis: " + std::string(ctx_->errstr));
    return reply_ptr(static_cast<redisReply*>(r));
  }
  reply_ptr cmd(const std::vector<std::string>& words) {
    append(words);
    return next();
  }
  long long subscribers(const std::string& channel) {
    auto r = cmd({"PUBSUB", "NUMSUB", channel});
    return r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : -1;
  }
  /// HGET of an integer field; 0 when missing.
  long long hget_int(const std::string& key, const std::string& field) {
    auto r = cmd({"HGET", key, field});
    return r->type == REDIS_REPLY_STRING ? std::atoll(r->str) : 0;
  }

 private:
  redisContext* ctx_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  auto opt = parse(argc, argv);
  const std::string ns = "bench";
  pushonce::keys k(ns);
  const std::string worker_bin = std::string(PUSHONCE_BIN_DIR) + "/pushonce-worker";

  pushonce::test::redis_server server;
  sync_redis r(server.port());

  // Enough inbox room that nothing is trimmed before the duplicate check.
  long long per_user = (opt.messages + opt.users - 1) / opt.users;
  std::vector<std::unique_ptr<pushonce::test::process>> workers;
  for (int i = 0; i < opt.workers; ++i) {
    std::vector<std::string> args{"--redis",        server.url(),
                                  "--namespace",    ns,
                                  "--id",           "bench-w" + std::to_string(i + 1),
                                  "--concurrency",  std::to_string(opt.concurrency),
                                  "--inbox-maxlen", std::to_string(std::max(1000LL, 2 * per_user)),
                                  "--log-level",    "info"};
    args.push_back(opt.trace ? "--trace" : "--no-trace");
    workers.push_back(std::make_unique<pushonce::test::process>(worker_bin, args));
  }
  auto ready_deadline = clock_type::now() + 10s;
  while (r.subscribers(k.bus_channel()) != opt.workers) {
    if (clock_type::now() > ready_deadline) {
      std::fprintf(stderr, "error: the workers did not subscribe within 10 s\n");
      for (auto& w : workers) std::fprintf(stderr, "%s", w->stderr_text().c_str());
      return 1;
    }
    std::this_thread::sleep_for(10ms);
  }

  // Pre-generated requests, in chunks of `chunk`.
  std::vector<std::vector<pushonce::publish_request>> chunks;
  for (long long i = 0; i < opt.messages; ++i) {
    if (i % opt.chunk == 0) chunks.emplace_back();
    chunks.back().push_back(pushonce::publish_request{
        "u" + std::to_string(i % opt.users),
        fmt::format(R"({{"n":{},"pad":"xxxxxxxxxxxxxxxx"}})", i), std::nullopt});
  }

  // Publishing runs on its own thread; this thread polls the counters.
  asio::io_context io;
  pushonce::redis::connection_options co;
  co.where = pushonce::redis::endpoint::parse(server.url());
  co.command_timeout = 30s;
  auto conn = pushonce::redis::connection::create(io.get_executor(), co);
  conn->start();
  std::vector<std::string> published_ids;
  long long publish_failures = 0;
  std::atomic<bool> published_all{false};
  clock_type::time_point t_published{};

  auto t0 = clock_type::now();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        pushonce::publisher pub(conn, k);
        for (auto& c : chunks) {
          auto batch = std::move(c);
          auto results = co_await pub.publish_batch(std::move(batch));
          for (auto& res : results) {
            if (res.has_value() && !res.value().duplicate)
              published_ids.push_back(res.value().id);
            else
              ++publish_failures;
          }
        }
        t_published = clock_type::now();
        published_all = true;
        conn->stop();
      },
      asio::detached);
  std::thread io_thread([&] { io.run(); });

  auto stats = k.plain("stats");
  const long long n = opt.messages;
  const long long expected_lost = n * (opt.workers - 1);
  auto deadline = t0 + opt.timeout;
  std::optional<clock_type::time_point> t_delivered, t_claims;
  long long delivered = 0, lost = 0;
  while (clock_type::now() < deadline) {
    auto d = r.hget_int(stats, "delivered");
    auto l = r.hget_int(stats, "duplicates_suppressed");
    auto now = clock_type::now();
    delivered = d;
    lost = l;
    if (!t_delivered && d >= n) t_delivered = now;
    if (d >= n && l >= expected_lost) {
      t_claims = now;
      break;
    }
    // Lost claims may lag or fall short (a claim that failed): give them 5 s after delivery.
    if (t_delivered && now - *t_delivered > 5s) break;
    std::this_thread::sleep_for(10ms);
  }
  io_thread.join();

  // Duplicate check: every inbox, every entry.
  long long inbox_total = 0, duplicate_ids = 0, bad_frames = 0, offset_gaps = 0;
  std::unordered_set<std::string> seen;
  seen.reserve(static_cast<std::size_t>(n) * 2);
  for (long long u = 0; u < opt.users; ++u)
    r.append({"XRANGE", k.user("u" + std::to_string(u), "inbox"), "-", "+"});
  for (long long u = 0; u < opt.users; ++u) {
    auto rep = r.next();
    if (rep->type != REDIS_REPLY_ARRAY) {
      ++bad_frames;
      continue;
    }
    for (size_t i = 0; i < rep->elements; ++i) {
      ++inbox_total;
      auto* fields = rep->element[i]->element[1];
      std::string f;
      for (size_t j = 0; j + 1 < fields->elements; j += 2)
        if (std::strcmp(fields->element[j]->str, "f") == 0)
          f.assign(fields->element[j + 1]->str, fields->element[j + 1]->len);
      boost::system::error_code ec;
      auto v = json::parse(f, ec);
      if (ec || !v.is_object() || !v.as_object().contains("id")) {
        ++bad_frames;
        continue;
      }
      const auto& o = v.as_object();
      if (!o.at("offset").is_int64() || o.at("offset").as_int64() != static_cast<long long>(i) + 1)
        ++offset_gaps;
      if (!seen.insert(std::string(o.at("id").as_string())).second) ++duplicate_ids;
    }
  }
  long long missing = 0;
  for (auto& id : published_ids) missing += seen.count(id) == 0;

  // Stop the workers (SIGTERM, exit 0 expected); each logs its final counters.
  int stopped_badly = 0;
  json::array won_by_worker;
  for (auto& w : workers) {
    stopped_badly += w->stop(10s) != 0;
    auto log = w->stderr_text();
    auto at = log.rfind("stopped: received");
    auto won = at == std::string::npos ? std::string::npos : log.find(" won ", at);
    won_by_worker.push_back(won == std::string::npos ? -1LL : std::atoll(log.c_str() + won + 5));
  }

  double secs = t_delivered ? seconds_since(t0, *t_delivered) : -1;
  double claim_secs = t_claims ? seconds_since(t0, *t_claims) : -1;
  double publish_secs = published_all ? seconds_since(t0, t_published) : -1;
  long long claims = delivered + lost;
  double delivered_per_s = secs > 0 ? static_cast<double>(n) / secs : 0;
  // Claims per second: every claim (won + lost) over the time until all were counted.
  double claims_per_s = claim_secs > 0 ? static_cast<double>(claims) / claim_secs
                        : secs > 0     ? static_cast<double>(claims) / secs
                                       : 0;
  bool ok = t_delivered && t_claims && delivered == n && lost == expected_lost &&
            publish_failures == 0 && static_cast<long long>(published_ids.size()) == n &&
            inbox_total == n && duplicate_ids == 0 && bad_frames == 0 && offset_gaps == 0 &&
            missing == 0 && stopped_badly == 0;

  std::printf(
      "bench_claims: messages %lld workers %d concurrency %lld users %lld | seconds %.3f | "
      "delivered/s %.0f | claims/s %.0f | publish %.3f s | inbox total %lld, duplicate ids "
      "%lld, missing %lld | %s\n",
      n, opt.workers, opt.concurrency, opt.users, secs, delivered_per_s, claims_per_s, publish_secs,
      inbox_total, duplicate_ids, missing, ok ? "OK" : "FAILED");
  json::object j{{"bench", "claims"},
                 {"messages", n},
                 {"workers", opt.workers},
                 {"concurrency", opt.concurrency},
                 {"users", opt.users},
                 {"seconds", secs},
                 {"claims_seconds", claim_secs},
                 {"publish_seconds", publish_secs},
                 {"delivered", delivered},
                 {"duplicates_suppressed", lost},
                 {"claims", claims},
                 {"delivered_per_s", std::llround(delivered_per_s)},
                 {"claims_per_s", std::llround(claims_per_s)},
                 {"won_by_worker", won_by_worker},
                 {"inbox_total", inbox_total},
                 {"duplicate_ids", duplicate_ids},
                 {"missing_ids", missing},
                 {"bad_frames", bad_frames},
                 {"offset_gaps", offset_gaps},
                 {"publish_failures", publish_failures},
                 {"ok", ok}};
  std::printf("%s\n", json::serialize(j).c_str());
  if (!ok)
    for (auto& w : workers) std::fprintf(stderr, "%s", w->stderr_text().c_str());
  return ok ? 0 : 1;
}
