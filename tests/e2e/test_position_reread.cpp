// A gateway's re-read of the positions it watches (gateway/queue/position_notifier, after a missed
// queue event or a subscriber reconnect) with more watched users than one script call
// takes: the re-read goes out in bounded calls, and every session still gets its true
// position. The notifier runs in this process against a real redis-server, with sessions
// that only record the frames they are given (no WebSocket: 100,001 of them).

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "gateway/protocol/session_handle.hpp"
#include "gateway/queue/position_notifier.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_position_reread_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {

// Keeps the last position frame it was given.
class recording_session : public gateway::session_handle {
 public:
  void deliver(std::shared_ptr<const std::string> frame) override {
    static constexpr std::string_view key = "\"position\":";
    auto at = frame->find(key);
    if (at == std::string::npos) return;
    std::lock_guard lock(mutex_);
    last_ = std::stoll(frame->substr(at + key.size()));
    ++frames_;
  }
  long long frames() const {
    std::lock_guard lock(mutex_);
    return frames_;
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
  long long frames_ = 0;
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
  // Every position exact (approx_after 0): rounding far from the head is not what is tested.
  auto notifier = std::make_shared<gateway::position_notifier>(
      io.io.get_executor(), conn, k, std::chrono::milliseconds(100),
      gateway::position_notifier::default_reread_chunk, 0);
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
  const bool all = wait_until(
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

TEST_CASE(
    "positions: a session far from the head is pushed less often, then told its final place") {
  constexpr long long users = 1500;
  constexpr long long removed = 20;
  redis_server redis;
  keys k("e2ecadence");
  sync_redis r(redis.port());
  const auto waiting = k.queue("default", "waiting");
  std::vector<std::string> cmd{"ZADD", waiting};
  for (long long i = 0; i < users; ++i) {  // u0..u1499 with tickets 1..1500 (rank i+1)
    cmd.push_back(std::to_string(i + 1));
    cmd.push_back("u" + std::to_string(i));
  }
  r.cmd(cmd);
  r.cmd({"SET", k.queue("default", "events"), "7"});
  // The last minute's pace: 10 assignments a second (eta_s at 1000: 100 s, a frame per 10 s).
  const long long now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  std::vector<std::string> rate{"HSET",  k.queue("default", "rate"),
                                "first", std::to_string(now - 60'000),
                                "last",  std::to_string(now)};
  for (long long b = (now - 60'000) / 10'000; b <= now / 10'000; ++b) {
    rate.push_back(std::to_string(b));
    rate.push_back("100");
  }
  r.cmd(rate);

  io_thread io;
  redis::connection_options o;
  o.where = redis::endpoint::parse(redis.url());
  o.command_timeout = 10s;
  auto conn = redis::connection::create(io.io.get_executor(), o);
  conn->start();
  auto notifier = std::make_shared<gateway::position_notifier>(io.io.get_executor(), conn, k,
                                                               std::chrono::milliseconds(100));
  std::vector<std::shared_ptr<recording_session>> sessions;
  for (long long i = 0; i < users; ++i) {
    auto s = std::make_shared<recording_session>();
    notifier->watch(s, "default", "u" + std::to_string(i), i + 1, i + 1, 7);
    sessions.push_back(std::move(s));
  }
  // The head leaves one by one, an event every 100 ms.
  for (long long t = 1; t <= removed; ++t) {
    r.cmd({"ZREM", waiting, "u" + std::to_string(t - 1)});
    r.cmd({"SET", k.queue("default", "events"), std::to_string(7 + t)});
    notifier->on_wake("default " + std::to_string(7 + t) + " r " + std::to_string(t));
    pace(100ms, "the head leaves one by one, an event every 100 ms");
  }
  auto& near = sessions[50];        // position 51 -> 31: the interval
  auto& far = sessions[users - 1];  // position 1500 -> 1480: eta_s 148 s, 1 frame / 14.8 s
  CHECK(wait_until([&] { return near->last() == 51 - removed; }, 10s));
  const long long far_frames = far->frames();
  MESSAGE("frames while the head left: near " << near->frames() << ", far " << far_frames);
  CHECK(far_frames <= 1);  // at most its first, then not for 14.8 s
  CHECK(near->frames() > far_frames);
  // Once the line stops, the far session is still told its final place.
  CHECK(wait_until([&] { return far->last() == users - removed; }, 30s));
  long long right = 0;
  for (long long i = removed; i < users; ++i) right += sessions[i]->last() == i + 1 - removed;
  CHECK(right == users - removed);
  conn->stop();
}

}  // namespace test_position_reread_e2e
