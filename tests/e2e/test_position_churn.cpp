// Live positions at a cost that does not grow with the queue (docs/data-model.md, "Queue
// events"): one user churning join/leave within the per-session limits costs Redis the same
// number of calls whether 20 or 300 watched users wait (INFO commandstats, commands inside
// scripts included), position frames are coalesced to one per session per interval, and
// after the churn every waiting session's last position is its true rank.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_position_churn_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr auto interval = 200ms;  // --position-interval-ms

struct waiter {
  std::string user;
  std::unique_ptr<ws_client> ws;
  long long last = 0;  // the position it was last told
  int position_frames = 0;
};

// Reads every frame that is already there (1 ms per session without one).
void pump(std::vector<waiter>& ws) {
  for (auto& w : ws) {
    while (auto f = w.ws->receive(1ms)) {
      auto o = json::parse(*f).as_object();
      if (str_field(o, "type") == "position") {
        w.last = int_field(o, "position");
        ++w.position_frames;
      }
    }
  }
}

std::optional<json::object> next_of(ws_client& c, std::string_view type) {
  for (int i = 0; i < 50; ++i) {
    auto f = c.receive(100ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (str_field(o, "type") == type || o.contains("code")) return o;
  }
  return std::nullopt;
}

std::unique_ptr<ws_client> session(std::uint16_t port, const std::string& user) {
  auto c = std::make_unique<ws_client>();
  c->connect("127.0.0.1", port, "/ws");
  REQUIRE(c->send(hello_frame(user)));
  REQUIRE(next_of(*c, "welcome"));
  return c;
}

long long redis_calls(sync_redis& r) {
  auto info = r.text({"INFO", "commandstats"});
  long long total = 0;
  for (std::size_t at = 0; (at = info.find("calls=", at)) != std::string::npos; at += 6)
    total += std::stoll(info.substr(at + 6));
  return total;
}

// Joins `n` more waiting sessions; their join replies give their first positions.
void add_waiters(std::vector<waiter>& ws, std::uint16_t port, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    waiter w;
    w.user = "w" + std::to_string(ws.size());
    w.ws = session(port, w.user);
    REQUIRE(w.ws->send(R"({"op":"join"})"));
    auto j = next_of(*w.ws, "joined");
    REQUIRE(j);
    w.last = int_field(*j, "position");
    ws.push_back(std::move(w));
  }
}

struct churn_result {
  long long ops = 0, calls = 0;
  std::chrono::milliseconds took{};
};

// One user, four sessions, join then leave on each in turn, within the default limits
// (5 joins+leaves per second per session).
churn_result churn(deployment& d, std::vector<std::unique_ptr<ws_client>>& sessions,
                   std::vector<waiter>& ws) {
  churn_result r;
  const long long before = redis_calls(d.redis());
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 3; ++round) {
    for (auto& s : sessions) {
      REQUIRE(s->send(R"({"op":"join"})"));
      REQUIRE(next_of(*s, "joined"));
      REQUIRE(s->send(R"({"op":"leave"})"));
      REQUIRE(next_of(*s, "left"));
      r.ops += 2;
      pump(ws);
      pace(100ms, "within the limit of 5 joins+leaves a second per session");
    }
  }
  r.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  r.calls = redis_calls(d.redis()) - before;
  return r;
}

}  // namespace

TEST_CASE("position churn: Redis calls per queue change do not grow with the queue") {
  deployment d("poschurn", "churn");
  d.start_leader();
  auto gw = d.port_of(
      d.start_gateway({"--dev-auth", "--position-interval-ms", std::to_string(interval.count())}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  std::vector<waiter> ws;
  std::vector<std::unique_ptr<ws_client>> churner;
  for (int i = 0; i < 4; ++i) churner.push_back(session(gw, "churner"));

  add_waiters(ws, gw, 20);
  let_lapse(300ms, "a position interval (200 ms): the joins' frames sent");
  pump(ws);
  auto small = churn(d, churner, ws);
  add_waiters(ws, gw, 280);
  let_lapse(300ms, "a position interval (200 ms): the joins' frames sent");
  pump(ws);
  for (auto& w : ws) w.position_frames = 0;
  auto large = churn(d, churner, ws);

  const double per_op_small = double(small.calls) / double(small.ops);
  const double per_op_large = double(large.calls) / double(large.ops);
  INFO("20 waiting: ", small.calls, " calls for ", small.ops, " ops; 300 waiting: ", large.calls,
       " calls for ", large.ops, " ops in ", large.took.count(), " ms");
  // The scripts' own commands, the leader's look at the queue after each change, and
  // heartbeats (which grow with the run's time, not with the queue): a few dozen per op at
  // both sizes. One command per watched user per change would be ~300 per op at 300 waiting.
  CHECK(per_op_small < 40);
  CHECK(per_op_large < 40);
  CHECK(per_op_large < per_op_small + 20);

  // Nobody ahead of the waiters moved: no position frames during the churn (the churner
  // joins behind them and leaves again).
  for (auto& w : ws) CHECK(w.position_frames == 0);

  // The first five leave at once: everyone behind moves up five, told at most once per
  // interval, and the last value is the true rank.
  for (std::size_t i = 0; i < 5; ++i) {
    REQUIRE(ws[i].ws->send(R"({"op":"leave"})"));
    REQUIRE(next_of(*ws[i].ws, "left"));
  }
  const auto left_at = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - left_at < 3 * interval + 500ms) pump(ws);
  for (std::size_t i = 5; i < ws.size(); ++i) {
    auto rank = d.redis().integer({"ZRANK", d.k().queue("default", "waiting"), ws[i].user});
    CAPTURE(ws[i].user);
    CHECK(ws[i].last == rank + 1);
    CHECK(ws[i].position_frames <= 2);
  }
}

}  // namespace test_position_churn_e2e

namespace test_position_churn_e2e {

TEST_CASE("position churn: a queue event counter that went back still moves the sessions behind") {
  deployment d("poschurn", "counterback");
  d.start_leader();
  auto gw = d.port_of(
      d.start_gateway({"--dev-auth", "--position-interval-ms", std::to_string(interval.count())}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  std::vector<waiter> ws;
  add_waiters(ws, gw, 3);
  REQUIRE(ws[2].last == 3);
  // A failover lost the counter's last increment: the next event reuses a number this
  // gateway has applied already.
  const auto events = d.k().queue("default", "events");
  const auto before = std::stoll(d.redis().text({"GET", events}));
  d.redis().integer({"DECRBY", events, "1"});
  REQUIRE(ws[0].ws->send(R"({"op":"leave"})"));
  REQUIRE(next_of(*ws[0].ws, "left"));
  CHECK(std::stoll(d.redis().text({"GET", events})) == before);
  // The sessions behind the one who left are told they moved up.
  CHECK_MESSAGE(wait_until(
                    [&] {
                      pump(ws);
                      return ws[1].last == 1 && ws[2].last == 2;
                    },
                    10s),
                "w1 at " << ws[1].last << ", w2 at " << ws[2].last << "\n"
                         << d.digest());
}

}  // namespace test_position_churn_e2e

namespace test_position_churn_e2e {

// Far from the head (docs/protocol.md "Position cadence by distance"): beyond
// --approx-after a position frame says "approx":true (its value rounded to 3 significant
// digits: the unit tests of position_schedule show the rounding), nearer it is exact.
TEST_CASE("position churn: beyond --approx-after position frames say approx") {
  deployment d("poschurn", "approx");
  d.start_leader();
  auto gw = d.port_of(d.start_gateway({"--dev-auth", "--position-interval-ms",
                                       std::to_string(interval.count()), "--approx-after", "3"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  std::vector<waiter> ws;
  add_waiters(ws, gw, 6);
  for (std::size_t i = 0; i < ws.size(); ++i) CHECK(ws[i].last == static_cast<long long>(i) + 1);

  REQUIRE(ws[0].ws->send(R"({"op":"leave"})"));
  REQUIRE(next_of(*ws[0].ws, "left"));
  for (std::size_t i = 1; i < ws.size(); ++i) {
    auto f = next_of(*ws[i].ws, "position");
    CAPTURE(ws[i].user);
    REQUIRE(f);
    const auto position = static_cast<long long>(i);
    CHECK(int_field(*f, "position") == position);
    const auto* approx = f->if_contains("approx");
    if (position > 3) {
      CHECK((approx && approx->is_bool() && approx->as_bool()));
    } else {
      CHECK(approx == nullptr);
    }
  }
}

}  // namespace test_position_churn_e2e
