// The waiting room in batches, end to end: 300 sessions on two gateways wait in one queue;
// resources are added in steps while the active leader is killed -9 between them (a
// standby finishes the work under a newer fencing token). Every resource reaches one user,
// every assigned user gets one assignment frame, in queue order, and every session still
// waiting ends at its true rank.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_waiting_room_batches_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

struct waiter {
  std::string user;
  std::unique_ptr<ws_client> ws;
  long long position = 0;              // the latest joined/position value
  std::vector<std::string> resources;  // assignment frames, in order
  std::set<std::string> ids;
  int duplicates = 0;
};

void read_frame(waiter& w, const std::string& text) {
  auto o = json::parse(text).as_object();
  auto type = str_field(o, "type");
  if (type == "joined" || type == "position") {
    w.position = int_field(o, "position");
  } else if (type == "message" && str_field(o, "kind") == "assignment") {
    if (!w.ids.insert(str_field(o, "id")).second) ++w.duplicates;
    w.resources.push_back(std::string(o.at("data").as_object().at("resource").as_string()));
  }
}

void pump(std::vector<waiter>& ws, std::chrono::milliseconds per = 1ms) {
  for (auto& w : ws)
    while (auto f = w.ws->receive(per)) read_frame(w, *f);
}

std::string resource_name(int i) {
  return "r" + std::to_string(1000 + i);
}

}  // namespace

TEST_CASE("waiting room: batched assignments across a leader kill -9, exactly once, in order") {
  deployment d("wrbatch", "batches");
  auto& first = d.start_leader({"--lease-ms", "1000", "--assign-batch", "20"});
  const auto leader_key = d.k().plain("leader");
  REQUIRE(wait_until(
      [&] {
        return d.redis().text({"HGET", leader_key, "pid"}) == std::to_string(first.pid());
      },
      10s));
  d.start_leader({"--lease-ms", "1000", "--assign-batch", "20"});  // the standby
  d.start_worker();
  d.start_worker();
  std::vector<std::uint16_t> gws;
  for (int i = 0; i < 2; ++i)
    gws.push_back(d.port_of(d.start_gateway({"--dev-auth", "--position-interval-ms", "200"})));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  constexpr int users = 300;
  std::vector<waiter> ws;
  for (int i = 0; i < users; ++i) {
    waiter w;
    w.user = "u" + std::to_string(i);
    w.ws = std::make_unique<ws_client>();
    w.ws->connect("127.0.0.1", gws[static_cast<std::size_t>(i % 2)], "/ws");
    REQUIRE(w.ws->send(hello_frame(w.user)));
    REQUIRE(w.ws->send(R"({"op":"join"})"));
    ws.push_back(std::move(w));
  }
  const auto joined_by = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < joined_by) {
    pump(ws);
    bool all = true;
    for (auto& w : ws) all = all && w.position > 0;
    if (all) break;
  }
  for (auto& w : ws) REQUIRE_MESSAGE(w.position > 0, w.user << " did not join");
  // Join order is the order of the join replies in Redis: the assignment order to expect.
  std::vector<std::string> order;
  auto line = d.redis().cmd({"ZRANGE", d.k().queue("default", "waiting"), "0", "-1"});
  for (std::size_t i = 0; i < line->elements; ++i)
    order.emplace_back(line->element[i]->str, line->element[i]->len);
  REQUIRE(order.size() == users);

  // 200 resources in five steps of 40; the active leader is killed -9 after the second.
  int added = 0;
  for (int step = 0; step < 5; ++step) {
    std::vector<std::string> args{"resource", "add"};
    for (int i = 0; i < 40; ++i) args.push_back(resource_name(added++));
    auto r = d.admin(args);
    REQUIRE_MESSAGE(r.code() == 0, r.describe());
    if (step == 1) first.kill(SIGKILL);
    pump(ws);
  }
  const auto until = std::chrono::steady_clock::now() + 20s;
  auto assigned = [&] {
    int n = 0;
    for (auto& w : ws) n += static_cast<int>(w.resources.size());
    return n;
  };
  while (std::chrono::steady_clock::now() < until && assigned() < added) pump(ws);
  // Quiet for two intervals: late duplicates and the final positions arrive.
  const auto settle = std::chrono::steady_clock::now() + 1s;
  while (std::chrono::steady_clock::now() < settle) pump(ws, 5ms);

  INFO(d.digest());
  CHECK(assigned() == added);
  std::set<std::string> resources;
  std::map<std::string, const waiter*> by_user;
  for (auto& w : ws) {
    by_user[w.user] = &w;
    CHECK(w.duplicates == 0);
    CHECK(w.resources.size() <= 1);
    for (auto& r : w.resources) CHECK_MESSAGE(resources.insert(r).second, r << " given twice");
  }
  CHECK(resources.size() == static_cast<std::size_t>(added));
  // First come, first served: the first 200 in line got one, the others none.
  for (std::size_t i = 0; i < order.size(); ++i) {
    CAPTURE(order[i]);
    CHECK(by_user[order[i]]->resources.size() == (i < static_cast<std::size_t>(added) ? 1u : 0u));
  }
  // Everyone still waiting is told their true rank.
  for (std::size_t i = static_cast<std::size_t>(added); i < order.size(); ++i) {
    CAPTURE(order[i]);
    CHECK(by_user[order[i]]->position == static_cast<long long>(i) - added + 1);
  }
  // The standby took over with a newer fencing token.
  CHECK(d.redis().text({"HGET", leader_key, "pid"}) != std::to_string(first.pid()));
}

}  // namespace test_waiting_room_batches_e2e
