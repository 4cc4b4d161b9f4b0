// End-to-end abandonment with the real programs: users who closed every session leave the
// queue after abandon_after_s while present users keep their places; a user with tabs on
// two gateways who closes one stays; a gateway killed -9 releases its users once its
// heartbeat has lapsed; an assigned user who leaves loses the assignment to the next.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "core/lua/presence.hpp"
#include "core/redis/scripts.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_waiting_room_presence_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

// A leader, a worker and two --dev-auth gateways in a fresh namespace, with more arguments
// for the leader and the gateways.
struct presence_system : deployment {
  explicit presence_system(std::vector<std::string> leader_args = {},
                           std::vector<std::string> gateway_args = {})
      : deployment("presence", "sys") {
    start_leader(std::move(leader_args));
    start_worker();
    gateway_args.push_back("--dev-auth");
    ports.push_back(port_of(start_gateway(gateway_args)));
    ports.push_back(port_of(start_gateway(gateway_args)));
    REQUIRE_MESSAGE(wait_ready(), ready_failure());
  }
  // A session of `user` on gateway `g` that has joined `queue` (when given).
  std::unique_ptr<ws_client> session(const std::string& user, std::size_t g, bool join) {
    auto c = std::make_unique<ws_client>();
    c->connect("127.0.0.1", ports.at(g));
    REQUIRE(c->send(json::serialize(json::object{{"op", "hello"}, {"user", user}})));
    REQUIRE(frame_of_type(*c, "welcome"));
    if (join) {
      REQUIRE(c->send(R"({"op":"join","queue":"default"})"));
      REQUIRE(frame_of_type(*c, "joined"));
    }
    return c;
  }
  static bool frame_of_type(ws_client& c, std::string_view type) {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      auto f = c.receive(200ms);
      if (!f) {
        if (c.closed()) return false;
        continue;
      }
      auto v = json::parse(*f).as_object();
      if (v.at("type").as_string() == type) return true;
    }
    return false;
  }
  bool waiting(const std::string& user) {
    return redis().cmd({"ZSCORE", k().queue("default", "waiting"), user})->type != REDIS_REPLY_NIL;
  }
  long long absent_count() { return redis().integer({"ZCARD", lua::presence_key(k(), "absent")}); }
  // How long ago (ms, by Redis's clock) gateway `g`'s instance registered in gws.
  long long instance_age_ms(process& g) {
    auto instance = redis().text({"HGET", k().plain("gateway:" + id_of(g)), "presence"});
    auto registered = redis().text({"ZSCORE", lua::presence_key(k(), "gws"), instance});
    auto t = redis().cmd({"TIME"});
    if (instance.empty() || registered.empty() || !t || t->elements != 2) return -1;
    long long now = std::stoll(t->element[0]->str) * 1000 + std::stoll(t->element[1]->str) / 1000;
    return now - std::stoll(registered);
  }
  std::vector<std::uint16_t> ports;
};

}  // namespace

TEST_CASE(
    "abandonment e2e: ghosts leave after abandon_after_s; present users and a second tab "
    "stay; position answers not_queued") {
  presence_system sys;
  sys.redis().cmd({"HSET", sys.k().queue("default", "settings"), "abandon_after_s", "2"});
  auto present = sys.session("present", 0, true);
  auto ghost = sys.session("ghost", 0, true);
  auto tab1 = sys.session("twotabs", 0, true);
  auto tab2 = sys.session("twotabs", 1, false);
  // An admin join with no session counts from the join.
  REQUIRE(sys.admin({"join", "cliuser"}).code() == 0);
  ghost->close();
  tab1->close();  // the other tab on the second gateway stays open
  // status --json shows the absences held (the admin join and the ghost) and since when.
  CHECK(wait_until(
      [&] {
        auto p = sys.status().at("presence").as_object();
        return p.at("absent").as_int64() >= 1 && p.at("absent_since").is_int64();
      },
      5s));
  REQUIRE(wait_until([&] { return !sys.waiting("ghost") && !sys.waiting("cliuser"); }, 15s));
  // Well past abandon_after_s: the present users are still there.
  observe_quiet(3s, "present users abandoned");
  CHECK(sys.waiting("present"));
  CHECK(sys.waiting("twotabs"));
  auto pos = sys.admin({"position", "ghost", "--json"});
  CHECK(pos.code() == 1);
  CHECK(pos.error() == "not_queued");
  CHECK(sys.redis().text({"HGET", sys.k().queue("default", "stats"), "abandoned"}) == "2");
  // The handled absences are forgotten.
  CHECK(wait_until([&] { return sys.absent_count() == 0; }, 10s));
  // A ghost who comes back and joins again goes to the tail.
  auto back = sys.session("ghost", 1, true);
  CHECK(sys.admin_json({"position", "ghost"}).at("position").as_int64() == 3);
}

TEST_CASE("abandonment e2e: a gateway killed -9 releases its users after its heartbeat lapses") {
  presence_system sys;
  sys.redis().cmd({"HSET", sys.k().queue("default", "settings"), "abandon_after_s", "1"});
  auto on_dead = sys.session("victim", 1, true);
  auto two = sys.session("split", 1, true);
  auto two_live = sys.session("split", 0, false);
  auto alive = sys.session("alive", 0, true);
  REQUIRE(sys.redis().integer({"ZCARD", lua::presence_key(sys.k(), "gws")}) == 2);
  sys.get(deployment::kind::gateway, 1).kill(SIGKILL);
  // The heartbeat lapses (3 s), the leader folds the instance, then 1 s of absence.
  REQUIRE(wait_until([&] { return !sys.waiting("victim"); }, 20s));
  CHECK(sys.waiting("split"));
  CHECK(sys.waiting("alive"));
  CHECK(wait_until(
      [&] {
        return sys.redis().integer({"ZCARD", lua::presence_key(sys.k(), "gws")}) == 1;
      },
      5s));
}

TEST_CASE(
    "abandonment e2e: a gateway paused past its heartbeat counts its sessions again and "
    "keeps its users") {
  // The leader's grace for a new instance 1 s (5 s by default), the gateways' presence
  // check every second (5 s by default).
  presence_system sys({"--gateway-grace-ms", "1000"}, {"--presence-check-ms", "1000"});
  sys.redis().cmd({"HSET", sys.k().queue("default", "settings"), "abandon_after_s", "7"});
  auto held = sys.session("paused", 1, true);
  auto gws = lua::presence_key(sys.k(), "gws");
  auto& g = sys.get(deployment::kind::gateway, 1);
  wait_for(
      "the gateway's instance past the leader's 1 s grace for a new one",
      [&] { return sys.instance_age_ms(g) > 1100; }, 10s, 50ms);
  g.kill(SIGSTOP);
  // The heartbeat lapses and the leader counts the paused gateway's sessions closed.
  // (Every gateway registers its instance in gws at start; the other one stays.)
  bool folded = wait_until([&] { return sys.redis().integer({"ZCARD", gws}) == 1; }, 15s);
  CHECK(sys.absent_count() == 1);
  g.kill(SIGCONT);
  REQUIRE(folded);
  // Within its next check the gateway counts them again: present, and kept past the 7 s.
  CHECK(wait_until([&] { return sys.absent_count() == 0; }, 10s));
  observe_quiet(8s, "the user abandoned after the 7 s");
  CHECK(sys.waiting("paused"));
}

TEST_CASE(
    "abandonment e2e: a folded gateway that opens a new session at once still counts its "
    "older sessions again") {
  presence_system sys({}, {"--presence-check-ms", "1000"});  // (5 s by default)
  sys.redis().cmd({"HSET", sys.k().queue("default", "settings"), "abandon_after_s", "5"});
  auto kept = sys.session("kept", 1, true);
  // The instance of gateway 1: the one whose sessions hash holds "kept".
  const auto gws = lua::presence_key(sys.k(), "gws");
  std::string instance;
  auto members = sys.redis().cmd({"ZRANGE", gws, "0", "-1"});
  for (std::size_t i = 0; members && i < members->elements; ++i) {
    std::string m(members->element[i]->str, members->element[i]->len);
    if (sys.redis().integer({"HEXISTS", lua::presence_key(sys.k(), "gw:" + m), "kept"}) == 1)
      instance = m;
  }
  REQUIRE_FALSE(instance.empty());
  // Its sessions are counted closed, as the leader does when a heartbeat lapsed (a pause),
  // and the gateway at once opens a new session, which puts the instance back in gws.
  auto fold = sys.redis().cmd({"EVAL", std::string(redis::get_script("presence_fold").text), "4",
                               lua::presence_key(sys.k(), "count"),
                               lua::presence_key(sys.k(), "gw:" + instance), gws,
                               lua::presence_key(sys.k(), "absent"), instance, "0", "1000"});
  REQUIRE(fold->type == REDIS_REPLY_ARRAY);
  CHECK(sys.absent_count() == 1);
  auto fresh = sys.session("fresh", 1, false);
  CHECK(wait_until([&] { return sys.redis().text({"ZSCORE", gws, instance}) != ""; }, 2s));
  // Within its next check the gateway counts "kept" again: present past the 5 s.
  const auto count = lua::presence_key(sys.k(), "count");
  CHECK(wait_until([&] { return sys.redis().text({"HGET", count, "kept"}) == "1"; }, 10s));
  observe_quiet(6s, "the connected user abandoned");
  CHECK(sys.waiting("kept"));
}

TEST_CASE(
    "abandonment e2e: a presence_open that fails is retried until it lands; the connected "
    "user stays in the line") {
  presence_system sys;
  sys.redis().cmd({"HSET", sys.k().queue("default", "settings"), "abandon_after_s", "4"});
  // Gateway 1's instance (its heartbeat names it); its sessions hash is made unusable, so
  // the next presence_open.lua fails at its first write.
  auto& g = sys.get(deployment::kind::gateway, 1);
  const auto instance =
      sys.redis().text({"HGET", sys.k().plain("gateway:" + sys.id_of(g)), "presence"});
  REQUIRE_FALSE(instance.empty());
  const auto mine = lua::presence_key(sys.k(), "gw:" + instance);
  sys.redis().cmd({"DEL", mine});
  sys.redis().cmd({"SET", mine, "broken"});
  auto kept = sys.session("kept", 1, true);
  wait_for(
      "the open failed once (the gateway's warning)",
      [&] {
        return sys.logs().find("presence: presence_open for kept failed") != std::string::npos;
      },
      5s, 20ms);
  // The hash is usable again (with the instance's "~live" field: no fold happened).
  sys.redis().cmd(
      {"EVAL", "redis.call('DEL', KEYS[1]) redis.call('HSET', KEYS[1], '~live', '0')", "1", mine});
  const auto count = lua::presence_key(sys.k(), "count");
  CHECK(wait_until([&] { return sys.redis().text({"HGET", count, "kept"}) == "1"; }, 8s));
  observe_quiet(6s, "the connected user abandoned");
  CHECK(sys.waiting("kept"));
}

TEST_CASE(
    "abandonment e2e: an assigned user who leaves before accepting loses the resource to "
    "the next user") {
  presence_system sys;
  sys.redis().cmd({"HSET", sys.k().queue("default", "settings"), "abandon_after_s", "1"});
  auto first = sys.session("first", 0, true);
  auto second = sys.session("second", 0, true);
  REQUIRE(sys.admin({"resource", "add", "seat1"}).code() == 0);
  REQUIRE(wait_until(
      [&] {
        return sys.redis().text({"HGET", sys.k().queue("default", "assigned"), "first"}) == "seat1";
      },
      10s));
  first->close();
  // No accept timeout is set: abandonment alone ends the assignment.
  REQUIRE(wait_until(
      [&] {
        return sys.redis().text({"HGET", sys.k().queue("default", "assigned"), "second"}) ==
               "seat1";
      },
      15s));
  CHECK(sys.redis().text({"HGET", sys.k().queue("default", "assigned"), "first"}).empty());
  CHECK(sys.redis().text({"HGET", sys.k().queue("default", "stats"), "abandoned_assignments"}) ==
        "1");
}

}  // namespace test_waiting_room_presence_e2e
