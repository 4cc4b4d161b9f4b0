// The pre-queue and its opening, end to end: 400 sessions on two gateways and 20,000 more
// users join a queue scheduled to open shortly with --shuffle; the active leader is killed
// -9 in the middle of the opening and a standby finishes it. Afterwards every user waits
// exactly once (tickets 1..N, none skipped or reused), the pre-queue is gone, the queue is
// open, and every pre-queued session has been pushed its true position.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_waiting_room_opening_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

struct prequeued_session {
  std::string user;
  std::unique_ptr<ws_client> ws;
  bool joined = false;     // the joined reply came (position null, opens_at)
  long long opens_at = 0;  // from the joined reply
  long long position = 0;  // the latest pushed position (0: none yet)
  int errors = 0;
};

void read_opening_frame(prequeued_session& s, const std::string& text) {
  auto o = json::parse(text).as_object();
  auto type = str_field(o, "type");
  if (type == "joined") {
    s.joined = o.at("position").is_null();
    if (o.at("opens_at").is_int64()) s.opens_at = o.at("opens_at").as_int64();
  } else if (type == "position" && o.at("position").is_int64()) {
    s.position = o.at("position").as_int64();
  } else if (type == "error") {
    ++s.errors;
  }
}

void pump_opening(std::vector<prequeued_session>& ss) {
  for (auto& s : ss)
    while (auto f = s.ws->receive(1ms)) read_opening_frame(s, *f);
}

long long e2e_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE(
    "opening: a shuffled pre-queue over 2 gateways, leader kill -9 mid-opening, exactly once") {
  deployment d("wropen", "opening");
  const std::vector<std::string> leader_args{"--lease-ms", "1000", "--opening-batch", "100"};
  auto& first = d.start_leader(leader_args);
  const auto leader_key = d.k().plain("leader");
  REQUIRE(wait_until(
      [&] {
        return d.redis().text({"HGET", leader_key, "pid"}) == std::to_string(first.pid());
      },
      10s));
  d.start_leader(leader_args);  // the standby
  std::vector<std::uint16_t> gws;
  for (int i = 0; i < 2; ++i)
    gws.push_back(d.port_of(d.start_gateway({"--dev-auth", "--position-interval-ms", "200"})));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  // Users already waiting keep their places ahead of the pre-queue.
  REQUIRE(d.admin({"join", "early"}).code() == 0);
  const auto opens_at = e2e_now_ms() + 6000;
  auto opened = d.admin_json({"open", "--at", std::to_string(opens_at), "--shuffle"});
  CHECK(str_field(opened, "state") == "prequeue");

  constexpr int sessions = 400, bulk = 20000;
  std::vector<prequeued_session> ss;
  for (int i = 0; i < sessions; ++i) {
    prequeued_session s;
    s.user = "s" + std::to_string(i);
    s.ws = std::make_unique<ws_client>();
    s.ws->connect("127.0.0.1", gws[static_cast<std::size_t>(i % 2)], "/ws");
    REQUIRE(s.ws->send(hello_frame(s.user)));
    REQUIRE(s.ws->send(R"({"op":"join"})"));
    ss.push_back(std::move(s));
  }
  // The bulk of the crowd is written straight into the pre-queue as join.lua writes it
  // (user -> join order), 1000 a command: the opening then takes a few hundred script calls.
  for (int from = 0; from < bulk; from += 1000) {
    std::vector<std::string> zadd{"ZADD", d.k().queue("default", "prequeue")};
    for (int i = from; i < from + 1000; ++i) {
      zadd.push_back(std::to_string(sessions + 1 + i));
      zadd.push_back("b" + std::to_string(i));
    }
    REQUIRE(d.redis().cmd(zadd));
  }
  d.redis().cmd(
      {"SET", d.k().queue("default", "prequeue:seq"), std::to_string(sessions + bulk + 1)});
  const auto joined_by = std::chrono::steady_clock::now() + 20s;
  auto all_joined = [&] {
    for (auto& s : ss)
      if (!s.joined) return false;
    return true;
  };
  while (std::chrono::steady_clock::now() < joined_by && !all_joined()) pump_opening(ss);
  REQUIRE(all_joined());
  for (auto& s : ss) CHECK(s.opens_at == opens_at);
  const auto pos = d.admin_json({"position", "s0"});
  CHECK(pos.at("position").is_null());
  CHECK(int_field(pos, "opens_at") == opens_at);

  // Kill the active leader -9 as soon as the first users are moved.
  const auto waiting = d.k().queue("default", "waiting");
  const auto prequeue = d.k().queue("default", "prequeue");
  REQUIRE(wait_until([&] { return d.redis().integer({"ZCARD", waiting}) > 1; }, 20s, 1ms));
  first.kill(SIGKILL);
  const auto left_at_kill = d.redis().integer({"ZCARD", prequeue});
  MESSAGE("pre-queued users left when the leader was killed: " << left_at_kill);

  const long long total = 1 + sessions + bulk;
  REQUIRE(wait_until([&] { return d.redis().integer({"ZCARD", prequeue}) == 0; }, 30s));
  CHECK(d.redis().integer({"ZCARD", waiting}) == total);
  auto line = d.redis().cmd({"ZRANGE", waiting, "0", "-1", "WITHSCORES"});
  std::map<std::string, long long> rank;
  std::set<long long> tickets;
  for (std::size_t i = 0; i + 1 < line->elements; i += 2) {
    std::string user(line->element[i]->str, line->element[i]->len);
    rank[user] = static_cast<long long>(i / 2 + 1);
    tickets.insert(std::stoll(std::string(line->element[i + 1]->str, line->element[i + 1]->len)));
  }
  CHECK(rank.size() == static_cast<std::size_t>(total));
  CHECK(rank["early"] == 1);
  // Every ticket 1..N once: nobody was moved twice (a second move would take a new ticket).
  CHECK(tickets.size() == static_cast<std::size_t>(total));
  CHECK(*tickets.begin() == 1);
  CHECK(*tickets.rbegin() == total);
  for (auto& s : ss) CHECK(rank.count(s.user) == 1);
  auto st = d.admin_json({"settings"});
  CHECK(str_field(st, "state") == "open");

  // Every pre-queued session is pushed its true position.
  const auto pushed_by = std::chrono::steady_clock::now() + 20s;
  auto all_pushed = [&] {
    for (auto& s : ss)
      if (s.position != rank[s.user]) return false;
    return true;
  };
  while (std::chrono::steady_clock::now() < pushed_by && !all_pushed()) pump_opening(ss);
  int missing = 0;
  for (auto& s : ss) {
    missing += s.position != rank[s.user];
    CHECK(s.errors == 0);
  }
  CHECK_MESSAGE(missing == 0, missing << " sessions without their true position");

  auto status = d.status();
  auto q = status.at("queues").as_object().at("default").as_object();
  CHECK(int_field(q, "length") == total);
  CHECK(int_field(q, "prequeue_length") == 0);
}

}  // namespace test_waiting_room_opening_e2e
