// A gateway's re-read of the positions it watches (gateway/position_notifier, after a missed
// queue event or a subscriber reconnect) with more watched users than one script call
// takes: the re-read goes out in bounded calls, and every session still gets its true
// position. The notifier runs in this process against a real redis-server, with sessions
// that only record the frames they are given (no WebSocket: 100,001 of them).

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "gateway/position_notifier.hpp"
#include "gateway/session.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_position_reread_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {

// Keeps the last position frame it was given.
class recording_session : public gateway::session {
 public:
  void deliver(std::shared_ptr<const std::string> frame) override {
    static constexpr std::string_view key = "\"position\":";
    auto at = frame->find(key);
    if (at == std::string::npos) return;
    std::lock_guard lock(mutex_);
    last_ = std::stoll(frame->substr(at + key.size()));
  }
  void request_catch_up() override {}
  void shutdown(std::uint16_t, std::string) override {}
  long long last() const {
    std::lock_guard lock(mutex_);
    return last_;
  }

 private:
  mutable std::mutex mutex_;
  long long last_ = 0;
};

// One io_context on its own thread, stopped and joined when the test ends.
struct io_thread {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread t{[this] { io.run(); }};
  ~io_thread() {
    work.reset();
    io.stop();
    t.join();
  }
};

bool wait_for(const std::function<bool()>& f, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return f();
}

}  // namespace

TEST_CASE("positions: a re-read of more watched users than one script call takes succeeds") {
  constexpr long long users = 100001;  // one more than positions.lua takes in one call
  redis_server redis;
  keys k("e2ereread");
  sync_redis r(redis.port());
  const auto waiting = k.queue("default", "waiting");
  // users u0..u100000 wait with tickets 1..100001 (rank i+1), after event 7
  for (long long from = 0; from < users; from += 1000) {
    std::vector<std::string> cmd{"ZADD", waiting};
    for (long long i = from; i < std::min(users, from + 1000); ++i) {
      cmd.push_back(std::to_string(i + 1));
      cmd.push_back("u" + std::to_string(i));
    }
    r.cmd(cmd);
  }
  r.cmd({"SET", k.queue("default", "events"), "7"});

  io_thread io;
  redis::connection_options o;
  o.where = redis::endpoint::parse(redis.url());
  o.command_timeout = 10s;
  auto conn = redis::connection::create(io.io.get_executor(), o);
  conn->start();
  auto notifier = std::make_shared<gateway::position_notifier>(io.io.get_executor(), conn, k,
                                                               std::chrono::milliseconds(100));
  // Every session is told it stands one place further back than it does (what a missed
  // leave leaves behind); the re-read must put each right.
  std::vector<std::shared_ptr<recording_session>> sessions;
  sessions.reserve(users);
  for (long long i = 0; i < users; ++i) {
    auto s = std::make_shared<recording_session>();
    notifier->watch(s, "default", "u" + std::to_string(i), i + 1, i + 2, 7);
    sessions.push_back(std::move(s));
  }
  notifier->resync_all();
  const bool all = wait_for(
      [&] {
        for (long long i = users - 1; i >= 0; i -= 997)
          if (sessions[i]->last() != i + 1) return false;
        return sessions.front()->last() == 1 && sessions.back()->last() == users;
      },
      30s);
  CHECK(all);
  long long right = 0;
  for (long long i = 0; i < users; ++i) right += sessions[i]->last() == i + 1;
  CHECK(right == users);
  conn->stop();
}

}  // namespace test_position_reread_e2e
