// Queue names from clients: a join, leave or position naming a queue that no queue can have
// (a 60 KB name, a hash tag, spaces) is answered bad_request by the gateway before any Redis
// call or cache sees it, and the session goes on.
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_queue_names_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

// calls= of one command in INFO commandstats (0 when it never ran).
long long calls_of(sync_redis& r, const std::string& command) {
  auto info = r.text({"INFO", "commandstats"});
  auto at = info.find("cmdstat_" + command + ":calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + command.size() + 15));
}

// The next frame of type `type` within 5 s.
std::optional<json::object> next_of(ws_client& ws, const std::string& type) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    auto f = ws.receive(100ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (str_field(o, "type") == type) return o;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("queue names: a name no queue can have is refused before Redis") {
  redis_server redis;
  deployment d(deployment_options{
      redis.url(), redis.port(), unique_namespace("names", "bad"), {}, {}, "warn"});
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  ws_client ws;
  ws.connect("127.0.0.1", port, "/ws");
  REQUIRE(ws.send(hello_frame("nina")));
  REQUIRE(next_of(ws, "welcome"));

  sync_redis r(redis.port());
  const long long hget_before = calls_of(r, "hget");
  const std::string huge(60000, 'q');
  for (const std::string& name : {huge, std::string("a{b}"), std::string("two words")}) {
    for (const char* op : {"join", "leave", "position"}) {
      CAPTURE(op);
      REQUIRE(ws.send(R"({"op":")" + std::string(op) + R"(","queue":")" + name + "\"}"));
      auto e = next_of(ws, "error");
      REQUIRE(e);
      CHECK(str_field(*e, "code") == "bad_request");
      CHECK(str_field(*e, "op") == op);
    }
  }
  CHECK(calls_of(r, "hget") == hget_before);
  // The session goes on.
  REQUIRE(ws.send(R"({"op":"ping"})"));
  CHECK(next_of(ws, "pong"));
}

}  // namespace test_queue_names_e2e
