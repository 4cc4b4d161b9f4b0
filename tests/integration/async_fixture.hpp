#pragma once
// What the integration fixtures share (redis_fixture: one redis-server; cluster_fixture: a
// Redis Cluster): one io_context driven by run(), the keys of namespace "t", and started
// connections that are stopped, and their loops let end, when the fixture goes.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/subscriber.hpp"
#include "tests/integration/run_async.hpp"

namespace pushonce::test {

class async_fixture {
 public:
  async_fixture(const async_fixture&) = delete;
  async_fixture& operator=(const async_fixture&) = delete;

  /// A new started connection (stopped with the fixture).
  std::shared_ptr<redis::connection> connect(redis::connection_options o) {
    auto c = redis::connection::create(io.get_executor(), std::move(o));
    c->start();
    conns_.push_back(c);
    return c;
  }

  template <typename F>
  auto run(F f, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    return run_async(io, std::move(f), limit);
  }

  boost::asio::io_context io;
  keys k{"t"};
  std::shared_ptr<redis::connection> conn;  // set by the fixture's constructor

 protected:
  async_fixture() = default;
  // Stops what was started and lets the loops see the stop and end; returns as soon as
  // nothing is left to run. Called by the fixtures' destructors, while their Redis still
  // runs.
  ~async_fixture() = default;
  void stop_all() {
    for (auto& c : conns_) c->stop();
    for (auto& s : subs_) s->stop();
    io.restart();
    io.run_for(std::chrono::seconds(2));
  }
  /// Keeps `s` to be stopped with the fixture.
  void own(std::shared_ptr<redis::subscriber> s) { subs_.push_back(std::move(s)); }

  /// Connection options with the fixtures' timeouts and a quick reconnect.
  static redis::connection_options quick_options() {
    redis::connection_options o;
    o.command_timeout = std::chrono::milliseconds(5000);
    o.backoff_initial = std::chrono::milliseconds(20);
    o.backoff_max = std::chrono::milliseconds(200);
    return o;
  }

 private:
  std::vector<std::shared_ptr<redis::connection>> conns_;
  std::vector<std::shared_ptr<redis::subscriber>> subs_;
};

}  // namespace pushonce::test
