// Position lookups under a join/leave flood (issue 10, finding 3): sessions flood joins and
// leaves on one queue while others wait in it. Every join/leave wakes the gateway's
// position_notifier; its ZRANK passes must stay bounded per debounce period (50 ms), not
// grow with the flood. Counted with INFO commandstats: ZRANK calls minus the one join.lua
// makes per successful join. After the flood, positions still reach the waiting users.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

// The first frame of `type` (position frames and others skipped), or nothing in time.
std::optional<json::object> next_of(ws_client& c, std::string_view type,
                                    std::chrono::milliseconds t = 5s) {
  auto end = std::chrono::steady_clock::now() + t;
  while (std::chrono::steady_clock::now() < end) {
    auto f = c.receive(200ms);
    if (!f) {
      if (c.closed()) break;
      continue;
    }
    auto o = json::parse(*f).as_object();
    if (str_field(o, "type") == type || (type == "error" && o.contains("code"))) return o;
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

long long zrank_calls(sync_redis& r) {
  auto info = r.text({"INFO", "commandstats"});
  auto at = info.find("cmdstat_zrank:calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + 20));
}

}  // namespace

TEST_CASE("position flood: join/leave floods keep position lookups bounded per debounce") {
  deployment d("posflood", "flood");
  d.start_leader();
  // Per-session limits out of the way: the flood is what the debounce alone must absorb.
  auto gw =
      d.port_of(d.start_gateway({"--dev-auth", "--frame-rate", "100000", "--frame-burst", "100000",
                                 "--queue-op-rate", "100000", "--queue-op-burst", "100000"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  constexpr int waiting = 5, flooders = 4;
  std::vector<std::unique_ptr<ws_client>> waiters, floods;
  for (int i = 0; i < waiting; ++i) {
    waiters.push_back(session(gw, "wait" + std::to_string(i)));
    REQUIRE(waiters.back()->send(R"({"op":"join"})"));
    auto j = next_of(*waiters.back(), "joined");
    REQUIRE(j);
    CHECK(int_field(*j, "position") == i + 1);
  }
  for (int i = 0; i < flooders; ++i) floods.push_back(session(gw, "flood" + std::to_string(i)));
  std::this_thread::sleep_for(300ms);  // the joins' own lookups are done

  const long long before = zrank_calls(d.redis());
  long long joins = 0, leaves = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 2s) {
    for (auto& f : floods) {
      REQUIRE(f->send(R"({"op":"join"})"));
      auto j = next_of(*f, "joined");
      REQUIRE(j);
      ++joins;
      REQUIRE(f->send(R"({"op":"leave"})"));
      REQUIRE(next_of(*f, "left"));
      ++leaves;
    }
  }
  const auto flood_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  std::this_thread::sleep_for(300ms);                                 // the last debounced pass
  const long long lookups = zrank_calls(d.redis()) - before - joins;  // join.lua: one each

  INFO("joins ", joins, ", leaves ", leaves, " in ", flood_ms, " ms; notifier ZRANKs ", lookups);
  REQUIRE(joins >= 100);  // a real flood: without the debounce, >= 2 x joins x 5 lookups
  // One pass per debounce period (plus the one running when it ends, plus the last one),
  // each one ZRANK per watched user (the waiting ones and the flooders in the queue).
  const long long passes = flood_ms / 50 + 4;
  CHECK(lookups > 0);
  CHECK(lookups <= passes * (waiting + flooders));
  CHECK(lookups < joins + leaves);

  // The notifier still works: the first in line leaves, everyone behind moves up one.
  REQUIRE(waiters[0]->send(R"({"op":"leave"})"));
  REQUIRE(next_of(*waiters[0], "left"));
  for (int i = 1; i < waiting; ++i) {
    auto p = next_of(*waiters[static_cast<std::size_t>(i)], "position");
    REQUIRE_MESSAGE(p, "wait" << i);
    CHECK(int_field(*p, "position") == i);
  }
}
