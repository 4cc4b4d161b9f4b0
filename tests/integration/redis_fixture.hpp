#pragma once
// A fixture for integration tests of the core: a private redis-server (free port, never
// 6379), one io_context driven by run(), a started connection to the server, and helpers
// for more connections and for subscribers that record what they receive.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "core/redis/subscriber.hpp"
#include "tests/integration/run_async.hpp"
#include "tests/support/redis_server.hpp"

namespace pushonce::test {

/// What a recording subscriber has received, in order.
struct received {
  std::vector<std::pair<std::string, std::string>> messages;  // channel, payload
  int connects = 0;
  std::size_t count(const std::string& channel) const {
    std::size_t n = 0;
    for (auto& m : messages) n += m.first == channel;
    return n;
  }
  std::vector<std::string> payloads(const std::string& channel) const {
    std::vector<std::string> out;
    for (auto& m : messages)
      if (m.first == channel) out.push_back(m.second);
    return out;
  }
};

class redis_fixture {
 public:
  explicit redis_fixture(redis_server_options server_options = {})
      : server(std::move(server_options)), k("t") {
    conn = connect();
  }

  ~redis_fixture() {
    for (auto& c : conns_) c->stop();
    for (auto& s : subs_) s->stop();
    // Let the loops see the stop and end; returns as soon as nothing is left to run.
    io.restart();
    io.run_for(std::chrono::seconds(2));
  }

  redis_fixture(const redis_fixture&) = delete;
  redis_fixture& operator=(const redis_fixture&) = delete;

  redis::connection_options options() const {
    redis::connection_options o;
    o.where = redis::endpoint::parse(server.url());
    o.command_timeout = std::chrono::milliseconds(5000);
    o.backoff_initial = std::chrono::milliseconds(20);
    o.backoff_max = std::chrono::milliseconds(200);
    return o;
  }

  /// A new started connection (stopped with the fixture).
  std::shared_ptr<redis::connection> connect(redis::connection_options o) {
    auto c = redis::connection::create(io.get_executor(), std::move(o));
    c->start();
    conns_.push_back(c);
    return c;
  }
  std::shared_ptr<redis::connection> connect() { return connect(options()); }

  /// A started subscriber recording into `into` (which must outlive the fixture's run()s).
  std::shared_ptr<redis::subscriber> subscriber(received& into, redis::connection_options o) {
    auto s = redis::subscriber::create(io.get_executor(), std::move(o),
                                       [&into](const std::string& ch, std::string payload) {
                                         into.messages.emplace_back(ch, std::move(payload));
                                       });
    s->on_connect([&into] { ++into.connects; });
    s->start();
    subs_.push_back(s);
    return s;
  }
  std::shared_ptr<redis::subscriber> subscriber(received& into) {
    return subscriber(into, options());
  }

  template <typename F>
  auto run(F f, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    return run_async(io, std::move(f), limit);
  }

  redis_server server;
  boost::asio::io_context io;
  keys k;
  std::shared_ptr<redis::connection> conn;

 private:
  std::vector<std::shared_ptr<redis::connection>> conns_;
  std::vector<std::shared_ptr<redis::subscriber>> subs_;
};

/// The words of a command; for building commands as named locals outside co_await.
inline redis::command cmd(std::initializer_list<std::string> words) {
  return redis::command(words);
}

}  // namespace pushonce::test
