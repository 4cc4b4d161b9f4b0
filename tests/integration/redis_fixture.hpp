#pragma once
// A fixture for integration tests of the core: a private redis-server (free port, never
// 6379), a started connection to it (async_fixture: the io_context, run(), more
// connections) and subscribers that record what they receive.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "core/redis/subscriber.hpp"
#include "tests/integration/async_fixture.hpp"
#include "tests/support/redis_server.hpp"

namespace pushonce::test {

/// What a recording subscriber has received, in order. The record itself is shared with the
/// subscriber's callbacks, so a `received` may be declared after the fixture (and so be
/// destroyed before the fixture's teardown runs the io_context, when a message or a
/// reconnect in flight still lands in the record).
struct received {
  struct record {
    std::vector<std::pair<std::string, std::string>> messages;  // channel, payload
    int connects = 0;
  };
  std::shared_ptr<record> shared = std::make_shared<record>();
  std::vector<std::pair<std::string, std::string>>& messages = shared->messages;
  int& connects = shared->connects;

  received() = default;
  received(const received&) = delete;
  received& operator=(const received&) = delete;

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

class redis_fixture : public async_fixture {
 public:
  explicit redis_fixture(redis_server_options server_options = {})
      : server(std::move(server_options)) {
    conn = connect();
  }
  ~redis_fixture() { stop_all(); }

  redis::connection_options options() const {
    auto o = quick_options();
    o.where = redis::endpoint::parse(server.url());
    return o;
  }

  using async_fixture::connect;
  std::shared_ptr<redis::connection> connect() { return connect(options()); }

  /// A started subscriber recording into `into` (its shared record: `into` itself may go
  /// before the subscriber stops).
  std::shared_ptr<redis::subscriber> subscriber(received& into, redis::connection_options o) {
    auto s =
        redis::subscriber::create(io.get_executor(), std::move(o),
                                  [rec = into.shared](const std::string& ch, std::string payload) {
                                    rec->messages.emplace_back(ch, std::move(payload));
                                  });
    s->on_connect([rec = into.shared] { ++rec->connects; });
    s->start();
    own(s);
    return s;
  }
  std::shared_ptr<redis::subscriber> subscriber(received& into) {
    return subscriber(into, options());
  }

  redis_server server;
};

/// The words of a command; for building commands as named locals outside co_await.
inline redis::command cmd(std::initializer_list<std::string> words) {
  return redis::command(words);
}

}  // namespace pushonce::test
