// End-to-end tests of the SSE transport (docs/protocol.md "SSE transport"): a real
// redis-server, the gateway as a process, a plain TCP SSE client and HTTP ops. A worker's
// delivery is a claim.lua call (as in test_gateway.cpp), which writes the message frame to the
// inbox and publishes it on the user's channel.

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/claim.hpp"
#include "core/message.hpp"
#include "core/redis/scripts.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sse_client.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

namespace test_sse_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* ns = "e2esse";
const std::string host = "127.0.0.1";

long long sse_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// A worker's delivery of message `id` to `user` (claim.lua); the offset.
// Message ids are decimal (seq × 4096 + source): each call takes the next one.
long long sse_deliver(std::uint16_t redis_port, const std::string& user, const std::string&,
                      const std::string& data_json = R"({"n":1})") {
  static long long seq = 0;
  const std::string id = std::to_string(4096 * ++seq + 3);
  keys k(ns);
  sync_redis r(redis_port);
  auto m = parse_bus_message(R"({"id":")" + id + R"(","user":")" + user +
                             R"(","src":"bus:0","kind":"message","data":)" + data_json +
                             R"(,"ts":)" + std::to_string(sse_now_ms()) + "}");
  REQUIRE(m);
  lua::claim_settings s;
  s.owner = "test-worker";
  s.epoch = "epoch-w";
  std::vector<bus_message> batch{*m};
  REQUIRE(r.cmd({"SCRIPT", "LOAD", redis::get_script("claim").text})->type == REDIS_REPLY_STRING);
  auto c = r.cmd(lua::script_command(lua::claim_for(k, s, batch)));
  REQUIRE(c->type == REDIS_REPLY_ARRAY);
  REQUIRE(c->elements == 2);
  return c->element[1]->integer;
}

struct sse_gateway {
  sse_gateway(const redis_server& redis, std::vector<std::string> extra, environment env = {})
      : d(deployment_options{redis.url(), redis.port(), ns, std::move(env), {}, "warn"}) {
    start(std::move(extra));
  }
  void start(std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--dev-auth", "--threads", "2"});
    proc = &d.start_gateway(std::move(extra));
    port = d.port_of(*proc);
    if (d.count(deployment::kind::gateway) == 1) {
      REQUIRE_MESSAGE(d.wait_ready(10s), d.ready_failure());
      return;
    }
    // A restart: the killed gateway is still in the deployment; wait on this one's /readyz.
    REQUIRE(wait_until(
        [&] { return http_request(host, port, "GET", "/readyz", {}, {}, 1s).status == 200; }, 15s,
        50ms));
  }
  deployment d;
  process* proc = nullptr;
  std::uint16_t port = 0;
};

json::object sse_json(const std::string& text) {
  auto v = json::parse(text);
  REQUIRE(v.is_object());
  return v.as_object();
}

// Opens an SSE session of `user`; returns the welcome object.
json::object sse_open(sse_client& c, std::uint16_t port, const std::string& user,
                      const headers& extra = {}) {
  REQUIRE(c.open(host, port, "/sse?user=" + user, extra) == 200);
  auto w = c.next();
  REQUIRE(w);
  CHECK(w->event == "welcome");
  return sse_json(w->data);
}

// The next message event: its offset, checked against its id.
long long sse_next_offset(sse_client& c, const std::string& epoch) {
  auto e = c.next();
  REQUIRE_MESSAGE(e, "expected a message event");
  CHECK(e->event.empty());
  auto o = sse_json(e->data);
  CHECK(str_field(o, "type") == "message");
  auto off = int_field(o, "offset");
  CHECK(e->id == epoch + ":" + std::to_string(off));
  return off;
}

http_reply sse_op(std::uint16_t port, const std::string& body) {
  return http_request(host, port, "POST", "/sse/op", body, {{"Content-Type", "application/json"}});
}

}  // namespace

TEST_CASE("sse: a session gets its messages as events and answers ops over POST /sse/op") {
  redis_server redis;
  sse_gateway gw(redis, {});
  sse_client c;
  auto w = sse_open(c, gw.port, "alice");
  const auto session = str_field(w, "session");
  const auto epoch = str_field(w, "epoch");
  CHECK(c.head().find("Content-Type: text/event-stream") != std::string::npos);

  for (int i = 1; i <= 3; ++i) {
    auto off = sse_deliver(redis.port(), "alice", "m" + std::to_string(i));
    CHECK(sse_next_offset(c, epoch) == off);
  }

  auto pong = sse_op(gw.port, R"({"session":")" + session + R"(","user":"alice","op":"ping"})");
  CHECK(pong.status == 200);
  CHECK(str_field(sse_json(pong.body), "type") == "pong");
  auto ack =
      sse_op(gw.port, R"({"session":")" + session + R"(","user":"alice","op":"ack","offset":2})");
  CHECK(ack.status == 204);
  auto unknown = sse_op(gw.port, R"({"session":"nope","user":"alice","op":"ping"})");
  CHECK(unknown.status == 404);
  CHECK(str_field(sse_json(unknown.body), "error") == "not_found");
  auto other = sse_op(gw.port, R"({"session":")" + session + R"(","user":"bob","op":"ping"})");
  CHECK(other.status == 404);
  auto no_user = sse_op(gw.port, R"({"session":")" + session + R"(","op":"ping"})");
  CHECK(no_user.status == 401);
  auto bad_op = sse_op(gw.port, R"({"session":")" + session + R"(","user":"alice","op":"fly"})");
  CHECK(bad_op.status == 200);
  CHECK(str_field(sse_json(bad_op.body), "code") == "unknown_op");
  CHECK(sse_op(gw.port, "{not json").status == 400);

  sse_client anon;
  CHECK(anon.open(host, gw.port, "/sse") == 401);
  CHECK(str_field(sse_json(anon.error_body()), "error") == "unauthorized");
  sse_client bad_since;
  CHECK(bad_since.open(host, gw.port, "/sse?user=alice&since=nope") == 400);

  // The session ends: its ops are answered 404.
  c.close();
  CHECK(wait_until(
      [&] {
        return sse_op(gw.port, R"({"session":")" + session + R"(","user":"alice","op":"ping"})")
                   .status == 404;
      },
      5s, 50ms, 50ms));
}

TEST_CASE("sse: resume by Last-Event-ID after a gateway kill -9: nothing lost, no duplicate") {
  redis_server redis;
  sse_gateway gw(redis, {});
  sse_client c;
  auto w = sse_open(c, gw.port, "carol");
  auto epoch = str_field(w, "epoch");
  std::string last_id;
  for (int i = 1; i <= 3; ++i) {
    sse_deliver(redis.port(), "carol", "a" + std::to_string(i));
    auto off = sse_next_offset(c, epoch);
    last_id = epoch + ":" + std::to_string(off);
  }
  gw.proc->kill(SIGKILL);
  gw.proc->wait(10s);
  c.close();
  std::vector<long long> missed;
  for (int i = 1; i <= 4; ++i)
    missed.push_back(sse_deliver(redis.port(), "carol", "b" + std::to_string(i)));
  gw.start({});

  sse_client again;
  auto w2 = sse_open(again, gw.port, "carol", {{"Last-Event-ID", last_id}});
  CHECK(w2.at("recovered") == true);
  CHECK(str_field(w2, "epoch") == epoch);
  std::vector<long long> got;
  for (std::size_t i = 0; i < missed.size(); ++i) got.push_back(sse_next_offset(again, epoch));
  CHECK(got == missed);
  auto more = sse_deliver(redis.port(), "carol", "c1");
  CHECK(sse_next_offset(again, epoch) == more);
  CHECK_FALSE(again.next(300ms));  // no duplicate after it

  // ?since= works the same.
  sse_client by_query;
  REQUIRE(by_query.open(host, gw.port,
                        "/sse?user=carol&since=" + epoch + ":" + std::to_string(missed.back())) ==
          200);
  auto w3 = by_query.next();
  REQUIRE(w3);
  CHECK(w3->event == "welcome");
  CHECK(sse_next_offset(by_query, epoch) == more);
}

TEST_CASE("sse: WebSocket and SSE sessions of one user get the same offsets") {
  redis_server redis;
  sse_gateway gw(redis, {});
  sse_client s;
  auto w = sse_open(s, gw.port, "dave");
  auto epoch = str_field(w, "epoch");
  ws_client ws;
  ws.connect(host, gw.port);
  REQUIRE(ws.send(hello_frame("dave")));
  auto ww = sse_json(*ws.receive());
  CHECK(str_field(ww, "type") == "welcome");
  CHECK(str_field(ww, "epoch") == epoch);
  for (int i = 1; i <= 5; ++i) {
    auto off = sse_deliver(redis.port(), "dave", "d" + std::to_string(i));
    CHECK(sse_next_offset(s, epoch) == off);
    auto f = ws.receive();
    REQUIRE(f);
    CHECK(int_field(sse_json(*f), "offset") == off);
  }
}

TEST_CASE("sse: SSE sessions count against --max-sessions-per-user") {
  redis_server redis;
  sse_gateway gw(redis, {"--max-sessions-per-user", "1"});
  ws_client ws;
  ws.connect(host, gw.port);
  REQUIRE(ws.send(hello_frame("erin")));
  REQUIRE(ws.receive());
  sse_client s;
  REQUIRE(s.open(host, gw.port, "/sse?user=erin") == 200);
  auto e = s.next();
  REQUIRE(e);
  CHECK(e->event == "error");
  auto o = sse_json(e->data);
  CHECK(str_field(o, "code") == "closed");
  CHECK(int_field(o, "close") == 1008);
  CHECK_FALSE(s.next(2s));
  CHECK(s.ended());
}

TEST_CASE("sse: join, assignment and accept over SSE with a leader and a worker") {
  deployment d("ssea", "assign");
  d.start_leader();
  d.start_worker();
  auto& g = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  const auto port = d.port_of(g);
  sse_client c;
  auto w = sse_open(c, port, "hank");
  const auto session = str_field(w, "session");
  auto joined = sse_op(port, R"({"session":")" + session + R"(","user":"hank","op":"join"})");
  REQUIRE(joined.status == 200);
  INFO(joined.body);
  CHECK(str_field(sse_json(joined.body), "type") == "joined");
  CHECK(int_field(sse_json(joined.body), "position") == 1);
  auto added = d.admin({"resource", "add", "r1", "--json"});
  REQUIRE(added.code() == 0);
  std::optional<json::object> assignment;
  for (int i = 0; i < 20 && !assignment; ++i) {
    auto e = c.next(1s);
    if (!e || !e->event.empty()) continue;  // positions are named events
    auto m = sse_json(e->data);
    if (str_field(m, "type") == "message") assignment = m;
  }
  REQUIRE(assignment);
  CHECK(str_field(*assignment, "kind") == "assignment");
  CHECK(int_field(*assignment, "offset") == 1);
  auto accepted =
      sse_op(port, R"({"session":")" + session + R"(","user":"hank","op":"accept","id":")" +
                       str_field(*assignment, "id") + R"("})");
  REQUIRE(accepted.status == 200);
  INFO(accepted.body);
  CHECK(str_field(sse_json(accepted.body), "type") == "accepted");
  auto ack =
      sse_op(port, R"({"session":")" + session + R"(","user":"hank","op":"ack","offset":1})");
  CHECK(ack.status == 204);
}

TEST_CASE("sse: a stream that is not read ends (slow consumer, 1013)") {
  redis_server redis;
  sse_gateway gw(redis, {});
  sse_client slow;
  sse_open(slow, gw.port, "ivan");
  std::string data = "\"" + std::string(16 * 1024, 'i') + "\"";
  for (int i = 1; i <= 1000; ++i) sse_deliver(redis.port(), "ivan", "", data);
  std::size_t messages = 0;
  std::optional<sse_event> last;
  while (auto e = slow.next(5s)) {
    if (e->event.empty()) ++messages;
    last = std::move(e);
  }
  CHECK(slow.ended());
  CHECK(messages < 1000);
  // The close event comes last unless the gateway dropped the connection at its close
  // deadline first.
  if (last && last->event == "error") CHECK(int_field(sse_json(last->data), "close") == 1013);
  auto metrics = http_request(host, gw.port, "GET", "/metrics");
  auto at = metrics.body.find("\npushonce_gateway_slow_consumer_closes_total{");
  REQUIRE(at != std::string::npos);
  auto line = metrics.body.substr(at + 1, metrics.body.find('\n', at + 1) - at - 1);
  CHECK(line.substr(line.rfind(' ') + 1) == "1");
}

TEST_CASE("sse: a disconnect ends the streams of the user; a revocation refuses GET /sse 401") {
  redis_server redis;
  sse_gateway gw(redis, {}, {{"PUSHONCE_API_KEY", "sse-key-1"}});
  sse_client c;
  sse_open(c, gw.port, "jo");
  auto r =
      http_request(host, gw.port, "POST", "/api/disconnect", R"({"user":"jo","revoke":true})",
                   {{"Authorization", "Bearer sse-key-1"}, {"Content-Type", "application/json"}});
  INFO(r.body);
  REQUIRE(r.status == 200);
  auto e = c.next(5s);
  REQUIRE(e);
  CHECK(e->event == "error");
  auto o = sse_json(e->data);
  CHECK(int_field(o, "close") == 1008);
  CHECK(str_field(o, "message") == "disconnected");
  CHECK_FALSE(c.next(5s));
  CHECK(c.ended());
  sse_client again;
  CHECK(again.open(host, gw.port, "/sse?user=jo") == 401);
}

TEST_CASE("sse: a draining gateway refuses new streams with 503 and ends its streams") {
  redis_server redis;
  sse_gateway gw(redis, {}, {{"PUSHONCE_DRAIN_DELAY_MS", "2000"}});
  sse_client s;
  sse_open(s, gw.port, "gina");
  gw.proc->kill(SIGTERM);
  CHECK(wait_until(
      [&] {
        sse_client late;
        return late.open(host, gw.port, "/sse?user=gina2") == 503;
      },
      2s, 20ms, 20ms));
  auto e = s.next(10s);
  REQUIRE(e);
  CHECK(e->event == "error");
  auto o = sse_json(e->data);
  CHECK(str_field(o, "code") == "closed");
  CHECK(int_field(o, "close") == 1001);
  CHECK_FALSE(s.next(5s));
  CHECK(s.ended());
}

// CPU seconds (user + system) that process `pid` has used so far.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto rest = stat.substr(stat.rfind(')') + 2);  // after "pid (comm) "
  std::istringstream fields(rest);
  std::string f;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoll(f);
    if (i == 15) stime = std::stoll(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

TEST_CASE("sse: ops queued behind one that waits on a stalled Redis wait without CPU") {
  redis_server redis;
  sse_gateway gw(redis, {});
  sse_client c;
  auto w = sse_open(c, gw.port, "alice");
  const auto session = str_field(w, "session");
  const auto pid = gw.proc->pid();

  // Redis stops answering; three ops of the session arrive one after another, each an ack
  // (a Redis write): the first waits on Redis, the other two wait for their turn.
  redis.pause();
  const double cpu_before = cpu_seconds(pid);
  std::vector<int> status(3, 0);
  std::vector<std::thread> ops;
  for (int i = 0; i < 3; ++i) {
    ops.emplace_back([&, i] {
      status[static_cast<std::size_t>(i)] =
          sse_op(gw.port, R"({"session":")" + session + R"(","user":"alice","op":"ack","offset":)" +
                              std::to_string(i + 1) + "}")
              .status;
    });
    pace(100ms, "the ops arrive one after another");
  }
  observe_quiet(1500ms, "the gateway spinning while its ops wait on Redis (CPU measured)");
  const double cpu_waiting = cpu_seconds(pid) - cpu_before;
  redis.resume();
  for (auto& t : ops) t.join();
  INFO("gateway CPU while the ops waited: " << cpu_waiting << " s");
  CHECK(cpu_waiting < 0.5);
  // Every op is answered once Redis is back (204 for an ack, or an error reply).
  for (int st : status) CHECK(st != 0);
  auto pong = sse_op(gw.port, R"({"session":")" + session + R"(","user":"alice","op":"ping"})");
  CHECK(pong.status == 200);
}

}  // namespace test_sse_e2e
