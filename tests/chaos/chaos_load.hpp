#pragma once
// The load of the chaos run, on one io_context and one thread: custom publishes at a steady
// rate through core/publisher (a unique idempotency key each, retried with the same key until
// accepted) and assignments (every user joins; resources are released one every 40 ms and
// their holders join again).

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/keys.hpp"
#include "core/publisher.hpp"
#include "core/queue_api.hpp"
#include "core/redis/connection.hpp"
#include "tests/chaos/chaos_common.hpp"

namespace pushonce::test::chaos {

namespace asio = boost::asio;

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
    // The releases' `expired` messages trim the queue's outbox by this retention too.
    queues_ = std::make_unique<pushonce::queue_api>(conn_, pushonce::keys(ns), po.retention);
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
        if (r.error().code == pushonce::errc::redis_unavailable)
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
    else if (r.error().code != pushonce::errc::already_queued &&
             r.error().code != pushonce::errc::already_assigned)
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

}  // namespace pushonce::test::chaos
