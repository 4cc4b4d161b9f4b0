// The system behind nginx (deploy/nginx/pushonce.conf, run by deploy/nginx/private-nginx.sh
// as a private process): a leader, two workers and two gateways; WebSocket clients connect
// only to nginx. Resume and exactly-once through the proxy, then one gateway behind it is
// killed and its clients resume through nginx on the other with no duplicate and no gap.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_nginx_nginx {

namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::hello_frame;
using pushonce::test::http_request;
using pushonce::test::int_field;
using pushonce::test::str_field;
using pushonce::test::wait_until;
using pushonce::test::ws_client;
using kind = pushonce::test::deployment::kind;

namespace {

// A private nginx in front of the running gateways of `d`.
struct nginx_front {
  nginx_front(pushonce::test::deployment& d) : port(pushonce::test::free_port()) {
    std::vector<std::string> args{
        std::string(PUSHONCE_SOURCE_DIR) + "/deploy/nginx/private-nginx.sh",
        "--dir",
        dir.path() + "/nginx",
        "--port",
        std::to_string(port),
        "--tls-port",
        std::to_string(pushonce::test::free_port())};
    for (auto* g : d.running(kind::gateway)) {
      args.push_back("--gateway");
      args.push_back("127.0.0.1:" + std::to_string(d.port_of(*g)));
    }
    proc = std::make_unique<pushonce::test::process>("bash", args);
    bool up =
        wait_until([&] { return http_request("127.0.0.1", port, "GET", "/healthz").status == 200; },
                   10s, 50ms);
    INFO("nginx stderr: ", proc->stderr_text());
    REQUIRE(up);
  }
  ~nginx_front() { proc->stop(5s); }
  pushonce::test::temp_dir dir{"pushonce-nginx"};
  std::uint16_t port;
  std::unique_ptr<pushonce::test::process> proc;
};

struct client {
  explicit client(std::string u) : user(std::move(u)) {}
  std::string user;
  ws_client ws;
  std::string epoch;
  std::vector<json::object> messages;

  json::object hello(std::uint16_t port, long long since_offset = -1) {
    ws.connect("127.0.0.1", port);
    std::string h = since_offset >= 0 ? hello_frame(user, epoch, since_offset) : hello_frame(user);
    REQUIRE(ws.send(h));
    auto first = ws.receive(5s);
    REQUIRE(first.has_value());
    auto w = json::parse(*first).as_object();
    REQUIRE(str_field(w, "type") == "welcome");
    epoch = str_field(w, "epoch");
    return w;
  }
  void pump(std::chrono::milliseconds quiet = 300ms) {
    for (auto& f : ws.drain(quiet)) {
      auto v = json::parse(f);
      if (v.is_object() && str_field(v.as_object(), "type") == "message")
        messages.push_back(v.as_object());
    }
  }
  long long last_offset() const {
    return messages.empty() ? 0 : int_field(messages.back(), "offset");
  }
  std::vector<long long> offsets() const {
    std::vector<long long> out;
    for (auto& m : messages) out.push_back(int_field(m, "offset"));
    return out;
  }
};

std::vector<long long> range(long long from, long long to) {
  std::vector<long long> out;
  for (long long i = from; i <= to; ++i) out.push_back(i);
  return out;
}

struct stack : pushonce::test::deployment {
  explicit stack(const std::string& what) : pushonce::test::deployment("ngx", what) {
    start_leader();
    start_worker();
    start_worker();
    // nginx is the gateways' client: as in the example environment, it is trusted
    start_gateway({"--dev-auth", "--id", "gw0", "--trusted-proxy", "127.0.0.1,::1"});
    start_gateway({"--dev-auth", "--id", "gw1", "--trusted-proxy", "127.0.0.1,::1"});
  }
};

}  // namespace

TEST_CASE("nginx: resume and exactly-once with the clients connected through nginx") {
  stack d("resume");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  nginx_front ngx(d);
  CHECK(http_request("127.0.0.1", ngx.port, "GET", "/readyz").status == 200);

  client c("carol");
  c.hello(ngx.port);
  d.publish("carol", R"({"n":1})");
  // the same idempotency key twice: one frame
  auto first = d.admin({"publish", "carol", R"({"n":2})", "--id", "order-2", "--json"});
  auto again = d.admin({"publish", "carol", R"({"n":2})", "--id", "order-2", "--json"});
  REQUIRE(first.code() == 0);
  REQUIRE(again.code() == 0);
  CHECK(again.out.at("duplicate").as_bool());
  REQUIRE(wait_until(
      [&] {
        c.pump(100ms);
        return c.messages.size() >= 2;
      },
      10s));
  c.pump();
  CHECK(c.offsets() == range(1, 2));
  c.ws.close();

  for (int n = 3; n <= 7; ++n) d.publish("carol", "{\"n\":" + std::to_string(n) + "}");
  REQUIRE(wait_until([&] { return d.redis().integer({"XLEN", d.inbox_key("carol")}) == 7; }, 10s));
  client back("carol");
  back.epoch = c.epoch;
  auto w = back.hello(ngx.port, c.last_offset());
  CHECK(w.at("recovered") == true);
  back.pump();
  CHECK(back.offsets() == range(3, 7));
}

TEST_CASE("nginx: a gateway behind nginx is killed; its clients resume on the other") {
  stack d("failover");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  nginx_front ngx(d);

  // 6 users through nginx: round robin spreads them over both gateways
  std::vector<std::unique_ptr<client>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<client>("u" + std::to_string(i)));
    clients.back()->hello(ngx.port);
  }
  auto sessions = [&](int g) {
    auto r = http_request("127.0.0.1", d.port_of(d.get(kind::gateway, g)), "GET", "/metrics");
    auto at = r.body.find("\npushonce_gateway_sessions{");
    return at == std::string::npos ? -1 : std::stoi(r.body.substr(r.body.find("} ", at) + 2));
  };
  INFO("sessions on gw0: ", sessions(0), ", gw1: ", sessions(1));
  CHECK(sessions(0) > 0);
  CHECK(sessions(1) > 0);

  constexpr int per_phase = 5;
  auto publish_round = [&](int from) {
    for (auto& c : clients)
      for (int n = from; n < from + per_phase; ++n)
        d.publish(c->user, "{\"n\":" + std::to_string(n) + "}");
  };
  publish_round(1);
  for (auto& c : clients)
    REQUIRE(wait_until(
        [&] {
          c->pump(50ms);
          return c->messages.size() >= per_phase;
        },
        10s));

  d.get(kind::gateway, 0).kill(SIGKILL);
  publish_round(per_phase + 1);  // while its clients are away

  int moved = 0;
  for (auto& c : clients) {
    c->pump(200ms);
    if (!c->ws.closed()) continue;
    ++moved;
    auto old = std::move(c->messages);
    auto epoch = c->epoch;
    auto user = c->user;
    c = std::make_unique<client>(user);
    c->epoch = epoch;
    c->messages = std::move(old);
    auto w = c->hello(ngx.port, c->last_offset());  // through nginx: lands on gw1
    CHECK(w.at("recovered") == true);
  }
  CHECK(moved > 0);
  publish_round(2 * per_phase + 1);
  for (auto& c : clients) {
    INFO("user ", c->user);
    REQUIRE(wait_until(
        [&] {
          c->pump(50ms);
          return c->messages.size() >= 3 * per_phase;
        },
        15s));
    c->pump(300ms);
    CHECK(c->offsets() == range(1, 3 * per_phase));  // no duplicate, no gap
    std::set<std::string> ids;
    std::set<long long> ns;
    for (auto& m : c->messages) {
      ids.insert(str_field(m, "id"));
      ns.insert(int_field(m.at("data").as_object(), "n"));
    }
    CHECK(ids.size() == static_cast<std::size_t>(3 * per_phase));
    CHECK(ns.size() == static_cast<std::size_t>(3 * per_phase));
  }
  CHECK(sessions(1) == static_cast<int>(clients.size()));
}

}  // namespace test_nginx_nginx
