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
#include <thread>
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
  // Positions exact at any distance (--approx-after 0): 20,401 wait, and each session's
  // true rank is what is checked (position_schedule's unit tests cover the rounding).
  std::vector<std::uint16_t> gws;
  for (int i = 0; i < 2; ++i)
    gws.push_back(d.port_of(
        d.start_gateway({"--dev-auth", "--position-interval-ms", "200", "--approx-after", "0"})));
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

TEST_CASE("controls: CLI, admin API, WebSocket refusals closed/full, status and /metrics") {
  const std::string token = "controls-admin-token";
  deployment d("wrctl", "controls", {{"PUSHONCE_ADMIN_TOKEN", token}});
  d.start_leader({"--accept-timeout", "30"});
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  // Unknown queue: not_found, exit 1.
  auto unknown = d.admin({"pause", "--queue", "nope", "--json"});
  CHECK(unknown.code() == 1);
  CHECK(unknown.error() == "not_found");
  auto bad = d.admin({"open", "--at", "1", "--json"});
  CHECK(bad.code() == 2);
  auto s = d.admin_json({"settings"});
  CHECK(int_field(s, "accept_timeout_s") == 30);  // the leader's --accept-timeout
  s = d.admin_json({"settings", "--max-waiting", "1", "--accept-timeout", "5"});
  CHECK(int_field(s, "max_waiting") == 1);
  CHECK(int_field(s, "accept_timeout_s") == 5);

  ws_client a, b;
  a.connect("127.0.0.1", port);
  b.connect("127.0.0.1", port);
  REQUIRE(a.send(hello_frame("alice")));
  REQUIRE(b.send(hello_frame("bob")));
  auto next_of = [](ws_client& c, const std::string& type) {
    for (int i = 0; i < 50; ++i) {
      auto f = c.receive(200ms);
      if (!f) continue;
      auto o = json::parse(*f).as_object();
      if (str_field(o, "type") == type) return o;
    }
    return json::object{};
  };
  next_of(a, "welcome");
  next_of(b, "welcome");
  REQUIRE(a.send(R"({"op":"join"})"));
  CHECK(int_field(next_of(a, "joined"), "position") == 1);
  REQUIRE(b.send(R"({"op":"join"})"));
  auto full = next_of(b, "error");
  CHECK(str_field(full, "code") == "full");
  CHECK(str_field(full, "op") == "join");

  // The dashboard's endpoint: admin token required; close, then open.
  CHECK(http_request("127.0.0.1", port, "POST", "/api/queue-control",
                     R"({"queue":"default","action":"close"})")
            .status == 401);
  const std::vector<std::pair<std::string, std::string>> auth{{"Authorization", "Bearer " + token}};
  auto closed = http_request("127.0.0.1", port, "POST", "/api/queue-control",
                             R"({"queue":"default","action":"close"})", auth);
  REQUIRE(closed.status == 200);
  CHECK(str_field(json::parse(closed.body).as_object(), "state") == "closed");
  CHECK(http_request("127.0.0.1", port, "POST", "/api/queue-control",
                     R"({"queue":"default","action":"explode"})", auth)
            .status == 400);
  CHECK(http_request("127.0.0.1", port, "POST", "/api/queue-control",
                     R"({"queue":"nope","action":"pause"})", auth)
            .status == 404);
  REQUIRE(b.send(R"({"op":"join"})"));
  CHECK(str_field(next_of(b, "error"), "code") == "closed");
  auto cli_closed = d.admin({"join", "carol", "--json"});
  CHECK(cli_closed.code() == 1);
  CHECK(cli_closed.error() == "closed");

  auto status = d.status();
  auto q = status.at("queues").as_object().at("default").as_object();
  CHECK(str_field(q, "state") == "closed");
  CHECK(int_field(q, "length") == 1);
  CHECK(int_field(q, "refused_closed") == 2);
  CHECK(int_field(q, "refused_full") == 1);
  CHECK(int_field(q, "abandoned") == 0);

  // /metrics: the queue's gauges and counters (cached 1 s).
  auto has_metrics = [&] {
    auto m = http_request("127.0.0.1", port, "GET", "/metrics");
    return m.body.find("pushonce_queue_closed{queue=\"default\"} 1") != std::string::npos &&
           m.body.find(
               "pushonce_queue_joins_refused_total{queue=\"default\",reason=\"closed\"} 2") !=
               std::string::npos &&
           m.body.find("pushonce_queue_waiting{queue=\"default\"} 1") != std::string::npos;
  };
  CHECK(wait_until(has_metrics, 5s, 200ms));

  auto reopened = d.admin_json({"open"});
  CHECK(str_field(reopened, "state") == "open");
  auto paused = d.admin_json({"pause"});
  CHECK(paused.at("paused").as_bool());
  // Paused: a resource added is not assigned; resume assigns it at once.
  REQUIRE(d.admin({"resource", "add", "r1"}).code() == 0);
  observe_quiet(300ms, "an assignment while paused");
  CHECK(d.redis().integer({"HLEN", d.k().queue("default", "assigned")}) == 0);
  CHECK_FALSE(d.admin_json({"resume"}).at("paused").as_bool());
  CHECK(wait_until(
      [&] {
        return d.redis().integer({"HLEN", d.k().queue("default", "assigned")}) == 1;
      },
      5s));
  auto assignment = next_of(a, "message");
  CHECK(str_field(assignment, "kind") == "assignment");
  // The queue's accept timeout (5 s) replaced the leader's (30 s).
  auto accept_by = assignment.at("data").as_object().at("accept_by").as_int64();
  CHECK(accept_by <= e2e_now_ms() + 6000);
}

}  // namespace test_waiting_room_opening_e2e
