// End-to-end tests of pushonce-gateway: a real redis-server, the gateway as a process, real
// WebSocket and HTTP clients. Without a worker, a worker's delivery is simulated by running
// claim.lua (the embedded script of core, called through core/lua/claim.hpp's builder),
// which writes the frame of core/message.hpp render_frame.

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/claim.hpp"
#include "core/lua/session.hpp"
#include "core/message.hpp"
#include "core/redis/scripts.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_e2e {

using namespace pushonce;
using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* ns = "e2egw";
constexpr const char* api_key = "secret-key-1";

long long now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// A worker's delivery of message `id` to `user`: one claim.lua call built by
// lua::claim_for (SCRIPT LOAD first: the command is an EVALSHA). The offset.
long long deliver_with(std::uint16_t redis_port, const std::string& user, const std::string& id,
                       const std::string& data_json, lua::publish_mode mode,
                       long long inbox_maxlen = 1000);

long long deliver(std::uint16_t redis_port, const std::string& user, const std::string& id,
                  const std::string& data_json) {
  return deliver_with(redis_port, user, id, data_json, lua::publish_mode::classic);
}

// The same with claim.lua's publish mode (none: in the inbox only, as if Pub/Sub lost it)
// and inbox length (--inbox-maxlen).
long long deliver_with(std::uint16_t redis_port, const std::string& user, const std::string& id,
                       const std::string& data_json, lua::publish_mode mode,
                       long long inbox_maxlen) {
  keys k(ns);
  sync_redis r(redis_port);
  auto m = parse_bus_message(R"({"id":")" + id + R"(","user":")" + user +
                             R"(","src":"bus:0","kind":"message","data":)" + data_json +
                             R"(,"ts":)" + std::to_string(now_ms()) + "}");
  REQUIRE(m);
  lua::claim_settings s;
  s.owner = "test-worker";
  s.epoch = "epoch-w";
  s.publish = mode;
  s.inbox_maxlen = inbox_maxlen;
  std::vector<bus_message> batch{*m};
  REQUIRE(r.cmd({"SCRIPT", "LOAD", redis::get_script("claim").text})->type == REDIS_REPLY_STRING);
  auto c = r.cmd(lua::script_command(lua::claim_for(k, s, batch)));
  INFO("claim.lua: " << (c->str ? c->str : ""));
  REQUIRE(c->type == REDIS_REPLY_ARRAY);
  REQUIRE(c->elements == 2);
  REQUIRE(std::string(c->element[0]->str) == "delivered");
  return c->element[1]->integer;
}

void ack_in_redis(std::uint16_t redis_port, const std::string& user, long long offset) {
  keys k(ns);
  sync_redis r(redis_port);
  REQUIRE(r.cmd({"SCRIPT", "LOAD", redis::get_script("ack").text})->type == REDIS_REPLY_STRING);
  auto a = r.cmd(lua::script_command(lua::ack_for(k, user, offset, std::nullopt)));
  REQUIRE(a->type == REDIS_REPLY_INTEGER);
}

json::object parse(const std::optional<std::string>& text) {
  REQUIRE_MESSAGE(text.has_value(), "expected a frame");
  auto v = json::parse(*text);
  REQUIRE(v.is_object());
  return v.as_object();
}

std::string str(const json::object& o, const char* k) {
  return str_field(o, k);
}
long long num(const json::object& o, const char* k) {
  return int_field(o, k);
}

// One gateway (--threads 2) in namespace `ns` on `redis`, healthy when constructed.
struct gateway_proc {
  gateway_proc(const redis_server& redis, std::vector<std::string> extra_args, environment env)
      : gateway_proc(redis.url(), redis, std::move(extra_args), std::move(env)) {}
  // Connecting with `url` (e.g. as an ACL user of `redis`).
  gateway_proc(const std::string& url, const redis_server& redis,
               std::vector<std::string> extra_args, environment env)
      : d(deployment_options{url, redis.port(), ns, std::move(env), {}, "warn"}) {
    extra_args.insert(extra_args.end(), {"--threads", "2"});
    proc = &d.start_gateway(std::move(extra_args));
    port = d.port_of(*proc);
    REQUIRE_MESSAGE(d.wait_ready(10s), d.ready_failure());
  }
  deployment d;
  process* proc = nullptr;
  std::uint16_t port = 0;
};

environment with_key() {
  return {{"PUSHONCE_API_KEY", api_key}};
}
environment without_key() {
  return {{"PUSHONCE_API_KEY", std::nullopt}};
}

// Connects and says hello; returns the welcome.
json::object hello(ws_client& c, std::uint16_t port, const std::string& user,
                   const std::string& since = {}) {
  c.connect("127.0.0.1", port);
  REQUIRE(c.send(hello_frame(user, since)));
  auto w = parse(c.receive());
  REQUIRE(str(w, "type") == "welcome");
  return w;
}

std::vector<long long> offsets_of(const std::vector<std::string>& frames) {
  std::vector<long long> out;
  for (auto& f : frames) {
    auto o = json::parse(f).as_object();
    CHECK(str(o, "type") == "message");
    out.push_back(num(o, "offset"));
  }
  return out;
}

}  // namespace

TEST_CASE("gateway: HTTP routes and /api/publish") {
  redis_server redis;
  gateway_proc gw(redis, {"--dev-auth"}, with_key());
  const std::string host = "127.0.0.1";
  auto auth = headers{{"Authorization", std::string("Bearer ") + api_key},
                      {"Content-Type", "application/json"}};

  auto h = http_request(host, gw.port, "GET", "/healthz");
  CHECK(h.status == 200);
  CHECK(h.body == "ok");

  auto nf = http_request(host, gw.port, "GET", "/nope");
  CHECK(nf.status == 404);
  CHECK(json::parse(nf.body).as_object().at("error") == "not_found");
  CHECK(http_request(host, gw.port, "GET", "/ws").status == 400);  // not an upgrade

  std::string one = R"({"user":"alice","data":{"n":1},"id":"k-1"})";
  CHECK(http_request(host, gw.port, "POST", "/api/publish", one).status == 401);
  auto wrong =
      http_request(host, gw.port, "POST", "/api/publish", one, {{"Authorization", "Bearer nope"}});
  CHECK(wrong.status == 401);
  CHECK(json::parse(wrong.body).is_object());

  auto bad = http_request(host, gw.port, "POST", "/api/publish", "{not json", auth);
  CHECK(bad.status == 400);
  CHECK(json::parse(bad.body).as_object().at("error") == "bad_request");
  CHECK(http_request(host, gw.port, "POST", "/api/publish", R"({"messages":[]})", auth).status ==
        400);
  CHECK(http_request(host, gw.port, "POST", "/api/publish", R"({"user":"a b","data":1})", auth)
            .status == 400);

  std::string big = R"({"user":"alice","data":")" + std::string(1100 * 1024, 'x') + "\"}";
  auto large = http_request(host, gw.port, "POST", "/api/publish", big, auth);
  CHECK(large.status == 413);
  CHECK(json::parse(large.body).is_object());

  auto ok = http_request(host, gw.port, "POST", "/api/publish", one, auth);
  REQUIRE(ok.status == 200);
  auto first = json::parse(ok.body).as_object();
  CHECK(first.at("duplicate") == false);
  auto id = str(first, "id");
  CHECK_FALSE(id.empty());
  auto again =
      json::parse(http_request(host, gw.port, "POST", "/api/publish", one, auth).body).as_object();
  CHECK(str(again, "id") == id);
  CHECK(again.at("duplicate") == true);

  std::string batch =
      R"({"messages":[{"user":"bob","data":1,"id":"b"},{"user":"bob","data":2,"id":"b"},{"user":"carol","data":null}]})";
  auto b = http_request(host, gw.port, "POST", "/api/publish", batch, auth);
  REQUIRE(b.status == 200);
  auto results = json::parse(b.body).as_object().at("results").as_array();
  REQUIRE(results.size() == 3);
  CHECK(results[0].as_object().at("duplicate") == false);
  CHECK(results[1].as_object().at("duplicate") == true);
  CHECK(results[1].as_object().at("id") == results[0].as_object().at("id"));

  // Redis gone: health 503 and publish 503 (within the command deadline)
  redis.stop();
  // (/healthz reuses its answer for 1 s: 503 within the second after that)
  CHECK(wait_until(
      [&] { return http_request(host, gw.port, "GET", "/healthz", {}, {}, 5s).status == 503; }, 5s,
      100ms));
  auto pub_down = http_request(host, gw.port, "POST", "/api/publish",
                               R"({"user":"alice","data":2})", auth, 15s);
  CHECK(pub_down.status == 503);
  CHECK(json::parse(pub_down.body).as_object().at("error") == "unavailable");

  CHECK(gw.proc->stop(5s) == 0);
}

TEST_CASE("gateway: without a key /api/publish is 403; without --dev-auth hello is refused") {
  redis_server redis;
  gateway_proc gw(redis, {}, without_key());
  auto r = http_request("127.0.0.1", gw.port, "POST", "/api/publish", R"({"user":"a","data":1})",
                        {{"Authorization", "Bearer x"}});
  CHECK(r.status == 403);
  CHECK(json::parse(r.body).is_object());

  ws_client c;
  c.connect("127.0.0.1", gw.port);
  REQUIRE(c.send(R"({"op":"hello","user":"alice"})"));
  CHECK_FALSE(c.receive());
  CHECK(c.closed());
  CHECK(c.close_code() == 1008);
  CHECK(c.close_reason() == "hello needs \"token\" (a JWT)");
  CHECK(gw.proc->stop(5s) == 0);
}

std::string hget(std::uint16_t redis_port, const std::string& key, const std::string& field) {
  return sync_redis(redis_port).text({"HGET", key, field});
}

TEST_CASE("gateway: WebSocket ops") {
  redis_server redis;
  gateway_proc gw(redis, {"--dev-auth", "--id", "gw-test"}, with_key());

  ws_client c;
  auto w = hello(c, gw.port, "alice");
  CHECK(str(w, "user") == "alice");
  CHECK_FALSE(str(w, "session").empty());
  CHECK_FALSE(str(w, "epoch").empty());
  CHECK(num(w, "offset") == 0);
  CHECK(w.at("recovered") == true);

  REQUIRE(c.send(R"({"op":"ping"})"));
  CHECK(str(parse(c.receive()), "type") == "pong");

  REQUIRE(c.send("{not json"));
  auto e = parse(c.receive());
  CHECK(str(e, "type") == "error");
  CHECK(str(e, "code") == "bad_request");
  REQUIRE(c.send(R"({"op":"ping"})"));
  CHECK(str(parse(c.receive()), "type") == "pong");  // still usable

  REQUIRE(c.send(R"({"op":"dance"})"));
  e = parse(c.receive());
  CHECK(str(e, "code") == "unknown_op");
  CHECK(str(e, "op") == "dance");

  REQUIRE(c.send(R"({"op":"ack"})"));
  CHECK(str(parse(c.receive()), "code") == "bad_request");

  // A queue that no leader runs: not_found, and not one key is written for it.
  auto keys_of = [&](const std::string& pattern) {
    return gw.d.redis().integer(
        {"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", gw.d.ns() + ":" + pattern});
  };
  REQUIRE(c.send(R"({"op":"join","queue":"nowhere"})"));
  e = parse(c.receive());
  CHECK(str(e, "code") == "not_found");
  CHECK(str(e, "op") == "join");
  CHECK(keys_of("{q:nowhere}*") == 0);

  // A leader runs "default" (and registers it): joins work.
  gw.d.start_leader();
  REQUIRE_MESSAGE(gw.d.wait_ready(10s), gw.d.ready_failure());
  REQUIRE(c.send(R"({"op":"join"})"));
  auto j = parse(c.receive());
  CHECK(str(j, "type") == "joined");
  CHECK(str(j, "queue") == "default");
  CHECK(num(j, "position") == 1);
  CHECK(num(j, "ticket") >= 1);

  REQUIRE(c.send(R"({"op":"join","queue":"default"})"));
  e = parse(c.receive());
  CHECK(str(e, "code") == "conflict");
  CHECK(str(e, "op") == "join");

  ws_client bob;
  hello(bob, gw.port, "bob");
  REQUIRE(bob.send(R"({"op":"join"})"));
  CHECK(num(parse(bob.receive()), "position") == 2);
  REQUIRE(bob.send(R"({"op":"position"})"));
  auto p = parse(bob.receive());
  CHECK(str(p, "type") == "position");
  CHECK(num(p, "position") == 2);

  REQUIRE(c.send(R"({"op":"leave"})"));
  auto l = parse(c.receive());
  CHECK(str(l, "type") == "left");
  CHECK(str(l, "queue") == "default");
  REQUIRE(c.send(R"({"op":"leave"})"));
  CHECK(str(parse(c.receive()), "code") == "not_found");
  REQUIRE(c.send(R"({"op":"position"})"));
  CHECK(str(parse(c.receive()), "code") == "not_found");
  REQUIRE(bob.send(R"({"op":"position"})"));
  CHECK(num(parse(bob.receive()), "position") == 1);

  REQUIRE(c.send(R"({"op":"join","queue":"bad name"})"));
  CHECK(str(parse(c.receive()), "code") == "bad_request");

  REQUIRE(c.send(R"({"op":"accept","id":"123"})"));
  e = parse(c.receive());
  CHECK(str(e, "code") == "not_found");

  REQUIRE(c.send(R"({"op":"hello","user":"alice"})"));
  CHECK(str(parse(c.receive()), "code") == "bad_request");

  REQUIRE(c.send(R"({"op":"ack","offset":0})"));  // no reply
  REQUIRE(c.send(R"({"op":"ping"})"));
  CHECK(str(parse(c.receive()), "type") == "pong");

  // heartbeat: listed with its session count; removed on a clean stop
  const std::string hb_key = std::string(ns) + ":gateway:gw-test";
  CHECK(wait_until([&] { return hget(redis.port(), hb_key, "sessions") == "2"; }, 3s, 100ms));
  CHECK(gw.proc->stop(5s) == 0);
  CHECK(hget(redis.port(), hb_key, "id").empty());
}

TEST_CASE("gateway: a session that does not read is closed with 1013") {
  redis_server redis;
  gateway_proc gw(redis, {"--dev-auth"}, with_key());
  ws_client slow, fast;
  hello(slow, gw.port, "dave");
  // ~16 MB of frames: more than the socket buffers and the 4 MiB send queue hold
  std::string data = "\"" + std::string(16 * 1024, 'd') + "\"";
  for (int i = 1; i <= 1000; ++i) deliver(redis.port(), "dave", std::to_string(4096 * i + 3), data);
  CHECK(slow.wait_closed(10s));
  CHECK(slow.close_code() == 1013);
  // the gateway still serves
  hello(fast, gw.port, "erin");
  REQUIRE(fast.send(R"({"op":"ping"})"));
  CHECK(str(parse(fast.receive()), "type") == "pong");
}

TEST_CASE("gateway: protocol violations close the connection") {
  redis_server redis;
  gateway_proc gw(redis, {"--dev-auth"}, with_key());

  ws_client first;
  first.connect("127.0.0.1", gw.port);
  REQUIRE(first.send(R"({"op":"ping"})"));
  CHECK_FALSE(first.receive());
  CHECK(first.close_code() == 1008);

  ws_client bad_user;
  bad_user.connect("127.0.0.1", gw.port);
  REQUIRE(bad_user.send(R"({"op":"hello","user":"no spaces allowed"})"));
  CHECK_FALSE(bad_user.receive());
  CHECK(bad_user.close_code() == 1008);

  ws_client big;
  hello(big, gw.port, "alice");
  std::string frame = R"({"op":"ping","pad":")" + std::string(65 * 1024, 'x') + "\"}";
  big.send(frame);
  CHECK(big.wait_closed(5s));
  CHECK(big.close_code() == 1009);

  // A session that never says hello: closed after --hello-timeout-ms (10 s by default).
  gateway_proc quick(redis, {"--dev-auth", "--hello-timeout-ms", "1000"}, with_key());
  ws_client silent;
  silent.connect("127.0.0.1", quick.port);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(silent.wait_closed(10s));
  CHECK(silent.close_code() == 1008);
  CHECK(silent.close_reason() == "hello expected within 1 s");
  CHECK(std::chrono::steady_clock::now() - t0 >= 900ms);

  // Origin allow-list
  gateway_proc strict(redis, {"--dev-auth", "--allowed-origin", "https://ok.example"}, with_key());
  ws_client good;
  good.connect("127.0.0.1", strict.port, "/ws", {{"Origin", "https://ok.example"}});
  ws_client no_origin;
  no_origin.connect("127.0.0.1", strict.port);
  ws_client evil;
  CHECK_THROWS(evil.connect("127.0.0.1", strict.port, "/ws", {{"Origin", "https://evil.example"}}));
}

TEST_CASE("gateway: live delivery, resume with since, backlog after the acked offset") {
  redis_server redis;
  gateway_proc gw(redis, {"--dev-auth"}, with_key());
  auto rp = redis.port();

  ws_client a1, a2, other;
  auto w = hello(a1, gw.port, "alice");
  hello(a2, gw.port, "alice");
  hello(other, gw.port, "zed");

  // live: both sessions of alice get each message once, in order; zed gets nothing
  for (int i = 1; i <= 3; ++i)
    CHECK(deliver(rp, "alice", std::to_string(4096 * i), "{\"n\":" + std::to_string(i) + "}") == i);
  auto got1 = a1.drain();
  auto got2 = a2.drain();
  CHECK(offsets_of(got1) == std::vector<long long>{1, 2, 3});
  CHECK(offsets_of(got2) == std::vector<long long>{1, 2, 3});
  CHECK(other.drain(100ms).empty());
  auto m = json::parse(got1[0]).as_object();
  CHECK(str(m, "id") == "4096");
  CHECK(str(m, "kind") == "message");
  CHECK(m.at("data").as_object().at("n") == 1);

  // the epoch the client resumes with is the one of the welcome
  auto epoch = str(w, "epoch");
  a1.close();
  a2.close();
  for (int i = 4; i <= 8; ++i)
    CHECK(deliver(rp, "alice", std::to_string(4096 * i), "{\"n\":" + std::to_string(i) + "}") == i);

  ws_client back;
  auto w2 = hello(back, gw.port, "alice", R"({"epoch":")" + epoch + R"(","offset":3})");
  CHECK(w2.at("recovered") == true);
  CHECK(num(w2, "offset") == 8);
  CHECK(offsets_of(back.drain()) == std::vector<long long>{4, 5, 6, 7, 8});
  CHECK(deliver(rp, "alice", "40960", "{}") == 9);
  CHECK(offsets_of(back.drain()) == std::vector<long long>{9});

  // ack 7 then a new session without since starts after it
  REQUIRE(back.send(R"({"op":"ack","offset":7})"));
  REQUIRE(back.send(R"({"op":"ping"})"));
  CHECK(str(parse(back.receive()), "type") == "pong");
  ws_client fresh;
  hello(fresh, gw.port, "alice");
  CHECK(offsets_of(fresh.drain()) == std::vector<long long>{8, 9});

  // another epoch: not recovered, replays after the acked offset
  ws_client stale;
  auto w3 = hello(stale, gw.port, "alice", R"({"epoch":"not-it","offset":2})");
  CHECK(w3.at("recovered") == false);
  CHECK(offsets_of(stale.drain()) == std::vector<long long>{8, 9});

  // a user who never connected gets the backlog after the acked offset
  for (int i = 1; i <= 4; ++i)
    CHECK(deliver(rp, "bob", std::to_string(4096 * i + 1), "{\"b\":" + std::to_string(i) + "}") ==
          i);
  ack_in_redis(rp, "bob", 1);
  ws_client bob;
  auto wb = hello(bob, gw.port, "bob");
  CHECK(num(wb, "offset") == 4);
  CHECK(wb.at("recovered") == true);
  CHECK(offsets_of(bob.drain()) == std::vector<long long>{2, 3, 4});

  // shutdown: sessions are closed with 1001, the gateway exits 0
  gw.proc->kill(SIGTERM);
  CHECK(bob.wait_closed(5s));
  CHECK(bob.close_code() == 1001);
  auto rc = gw.proc->wait(5s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}

TEST_CASE("gateway: replay and live overlap under load, across a Redis restart") {
  redis_server_options ro;
  ro.appendonly = true;
  redis_server redis(ro);
  gateway_proc gw(redis, {"--dev-auth"}, with_key());
  auto rp = redis.port();

  // a stream of deliveries while sessions connect: each session sees 1..N exactly once
  std::atomic<bool> go{true};
  std::atomic<int> delivered{0};
  std::thread writer([&] {
    for (int i = 1; i <= 300; ++i) {
      deliver(rp, "carol", std::to_string(4096 * i + 2), "{}");
      delivered = i;
      if (i % 20 == 0) pace(5ms, "deliveries in bursts of 20");
    }
  });
  std::vector<std::unique_ptr<ws_client>> clients;
  for (int k = 0; k < 5; ++k) {
    REQUIRE(wait_until([&] { return delivered >= k * 50; }, 20s, 1ms));
    clients.push_back(std::make_unique<ws_client>());
    hello(*clients.back(), gw.port, "carol");
  }
  writer.join();
  std::vector<long long> expected;
  for (int i = 1; i <= 300; ++i) expected.push_back(i);
  for (auto& c : clients) {
    auto got = offsets_of(c->take(expected.size(), 10s));
    CHECK(got == expected);
  }

  // Redis restarts: messages delivered before the subscriber is back are lost by Pub/Sub
  // and must come from the inbox (catch-up on reconnect)
  redis.restart();
  for (int i = 301; i <= 310; ++i) deliver(rp, "carol", std::to_string(4096 * i + 2), "{}");
  std::vector<long long> tail;
  for (int i = 301; i <= 310; ++i) tail.push_back(i);
  for (auto& c : clients) {
    auto got = offsets_of(c->take(tail.size(), 10s));
    CHECK(got == tail);
  }
  (void)go;
}

namespace {

// What a promoted replica that missed the last deliveries holds: the user's inbox and
// offset counter as they were at offset `keep` (one slot: a consistent prefix).
void lose_deliveries_after(std::uint16_t redis_port, const std::string& user, long long keep) {
  keys k(ns);
  sync_redis r(redis_port);
  const auto inbox = k.user(user, "inbox");
  auto entries = r.inbox(inbox);
  r.cmd({"DEL", inbox});  // a stream's last id never goes back: write the prefix again
  for (auto& [id, f] : entries)
    if (std::stoll(id) <= keep) r.cmd({"XADD", inbox, id, "f", f});
  r.cmd({"HSET", k.user(user, "meta"), "offset", std::to_string(keep)});
}

std::string metric_of(std::uint16_t port, const std::string& name) {
  auto r = http_request("127.0.0.1", port, "GET", "/metrics");
  auto at = r.body.find("\n" + name + "{");
  if (at == std::string::npos) return "missing";
  auto from = r.body.find("} ", at) + 2;
  return r.body.substr(from, r.body.find('\n', from) - from);
}

}  // namespace

TEST_CASE("gateway: offsets that go back (failover) give a new epoch and recovered:false") {
  redis_server redis;
  gateway_proc gw(redis, {"--dev-auth"}, with_key());
  auto rp = redis.port();
  keys k(ns);

  // A live session sees 1..5.
  ws_client live;
  auto w = hello(live, gw.port, "alice");
  const auto epoch = str(w, "epoch");
  for (int i = 1; i <= 5; ++i) CHECK(deliver(rp, "alice", std::to_string(4096 * i), "{}") == i);
  CHECK(offsets_of(live.drain()) == std::vector<long long>{1, 2, 3, 4, 5});

  // The failover lost 4 and 5; the next delivery gets offset 4 again, for another message.
  lose_deliveries_after(rp, "alice", 3);
  CHECK(deliver(rp, "alice", std::to_string(4096 * 100), "{}") == 4);
  // The live session does not drop it as a duplicate: it is closed 1013 and the epoch moves.
  CHECK(live.drain().empty());
  REQUIRE(live.wait_closed(5s));
  CHECK(live.close_code() == 1013);
  sync_redis r(rp);
  REQUIRE(wait_until(
      [&] {
        return r.text({"HGET", k.user("alice", "meta"), "epoch"}) != epoch;
      },
      5s));
  const auto epoch2 = r.text({"HGET", k.user("alice", "meta"), "epoch"});
  CHECK(metric_of(gw.port, "pushonce_gateway_offset_regression_closes_total") == "1");

  // The client comes back with what it saw: recovered false, the new epoch, and the inbox
  // from the acked offset (0), where offset 4 is the new message.
  ws_client back;
  auto w2 = hello(back, gw.port, "alice", R"({"epoch":")" + epoch + R"(","offset":5})");
  CHECK(w2.at("recovered") == false);
  CHECK(str(w2, "epoch") == epoch2);
  CHECK(num(w2, "offset") == 4);
  auto frames = back.drain();
  CHECK(offsets_of(frames) == std::vector<long long>{1, 2, 3, 4});
  REQUIRE(frames.size() == 4);
  CHECK(str(json::parse(frames[3]).as_object(), "id") == std::to_string(4096 * 100));

  // Hello path: a client offline during the failover, at offset 6 of epoch2, while the new
  // master only got to 4: the hello rotates the epoch (recovered false) ...
  back.close();
  ws_client away;
  auto w3 = hello(away, gw.port, "alice", R"({"epoch":")" + epoch2 + R"(","offset":6})");
  CHECK(w3.at("recovered") == false);
  const auto epoch3 = str(w3, "epoch");
  CHECK(epoch3 != epoch2);
  CHECK(metric_of(gw.port, "pushonce_gateway_epoch_rotations_total") == "1");
  away.drain();
  // ... so another tab at offset 6 of epoch2 that comes back after deliveries 5..7 is not
  // resumed silently past 5 and 6 (messages it never saw): recovered false too.
  for (int i = 5; i <= 7; ++i)
    CHECK(deliver(rp, "alice", std::to_string(4096 * (100 + i)), "{}") == i);
  ws_client tab;
  auto w4 = hello(tab, gw.port, "alice", R"({"epoch":")" + epoch2 + R"(","offset":6})");
  CHECK(w4.at("recovered") == false);
  CHECK(str(w4, "epoch") == epoch3);
  CHECK(offsets_of(tab.drain()) == std::vector<long long>{1, 2, 3, 4, 5, 6, 7});
  // and a client of the current epoch resumes as before
  ws_client cur;
  auto w5 = hello(cur, gw.port, "alice", R"({"epoch":")" + epoch3 + R"(","offset":6})");
  CHECK(w5.at("recovered") == true);
  CHECK(offsets_of(cur.drain()) == std::vector<long long>{7});
}

namespace {

// The gateway's own Redis user, whose rights a test takes away and gives back.
std::string gateway_acl_user(const redis_server& redis) {
  sync_redis r(redis.port());
  r.cmd({"ACL", "SETUSER", "gw", "on", ">gw-pass", "~*", "&*", "+@all"});
  return "redis://gw:gw-pass@127.0.0.1:" + std::to_string(redis.port());
}

// The ids of the connections named `name`; with `subscribed`, only those holding a
// subscription.
std::vector<std::string> connections_named(sync_redis& r, const std::string& name,
                                           bool subscribed) {
  std::vector<std::string> out;
  auto list = r.text({"CLIENT", "LIST"});
  for (std::size_t pos = 0; pos < list.size();) {
    auto eol = list.find('\n', pos);
    auto line = list.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? list.size() : eol + 1;
    auto sub = line.find(" sub=");
    if (line.find(" name=" + name + " ") == std::string::npos || line.rfind("id=", 0) != 0)
      continue;
    if (subscribed && (sub == std::string::npos || std::atoi(line.c_str() + sub + 5) < 1)) continue;
    out.push_back(line.substr(3, line.find(' ') - 3));
  }
  return out;
}

// Frames until one has offset `last` (or nothing comes for `quiet`).
std::vector<long long> offsets_until(ws_client& c, long long last,
                                     std::chrono::milliseconds quiet) {
  std::vector<long long> out;
  while (out.empty() || out.back() != last) {
    auto f = c.receive(quiet);
    if (!f) break;
    auto o = json::parse(*f).as_object();
    if (str(o, "type") == "message") out.push_back(num(o, "offset"));
  }
  return out;
}

std::vector<long long> range(long long from, long long to) {
  std::vector<long long> out;
  for (long long i = from; i <= to; ++i) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("gateway: a live session whose missed offsets were trimmed is closed 1013, not skipped") {
  redis_server redis;
  gateway_proc gw(redis, {"--dev-auth"}, with_key());
  auto rp = redis.port();
  sync_redis r(rp);
  r.cmd({"CONFIG", "SET", "stream-node-max-entries", "2"});  // MAXLEN ~ 5 trims close to 5

  ws_client live;
  auto w = hello(live, gw.port, "alice");
  CHECK(deliver(rp, "alice", "4096", "{}") == 1);
  CHECK(offsets_of(live.drain()) == std::vector<long long>{1});
  // 20 deliveries the session never hears (not published: as if Pub/Sub lost them) into an
  // inbox kept at about 5 entries, then one it hears: 22 shows the gap, and what the
  // catch-up can read starts well after 2.
  for (long long i = 2; i <= 21; ++i)
    CHECK(deliver_with(rp, "alice", std::to_string(4096 * i), "{}", lua::publish_mode::none, 5) ==
          i);
  CHECK(deliver_with(rp, "alice", std::to_string(4096 * 22), "{}", lua::publish_mode::classic, 5) ==
        22);
  auto got = live.drain();
  CHECK_MESSAGE(got.empty(), "sent past the gap: " << got.size() << " frames, first "
                                                   << (got.empty() ? "" : got.front()));
  REQUIRE(live.wait_closed(5s));
  CHECK(live.close_code() == 1013);
  CHECK(metric_of(gw.port, "pushonce_gateway_catch_up_gap_closes_total") == "1");

  // The client resumes after 1: told it lost messages, then given what is left, in order.
  ws_client back;
  auto w2 = hello(back, gw.port, "alice", R"({"epoch":")" + str(w, "epoch") + R"(","offset":1})");
  CHECK(w2.at("recovered") == false);
  auto offs = offsets_of(back.drain());
  REQUIRE(!offs.empty());
  CHECK(offs.front() > 2);
  CHECK(offs == range(offs.front(), 22));
}

TEST_CASE("gateway: a catch-up whose inbox read fails closes 1013 and sends nothing past the gap") {
  redis_server redis;
  const auto url = gateway_acl_user(redis);
  gateway_proc gw(url, redis, {"--dev-auth"}, with_key());
  auto rp = redis.port();
  sync_redis r(rp);

  ws_client live;
  auto w = hello(live, gw.port, "alice");
  CHECK(deliver(rp, "alice", "4096", "{}") == 1);
  CHECK(offsets_of(live.drain()) == std::vector<long long>{1});
  r.cmd({"ACL", "SETUSER", "gw", "-xrange"});  // the gateway can no longer read inboxes
  CHECK(deliver_with(rp, "alice", "8192", "{}", lua::publish_mode::none) == 2);  // unheard
  CHECK(deliver(rp, "alice", "12288", "{}") == 3);  // heard: a gap the catch-up cannot read
  auto got = live.drain();
  CHECK_MESSAGE(got.empty(), "sent past the gap: " << (got.empty() ? "" : got.front()));
  REQUIRE(live.wait_closed(5s));
  CHECK(live.close_code() == 1013);

  // Once Redis lets the gateway read again, the client resumes with nothing lost.
  r.cmd({"ACL", "SETUSER", "gw", "+xrange"});
  ws_client back;
  auto w2 = hello(back, gw.port, "alice", R"({"epoch":")" + str(w, "epoch") + R"(","offset":1})");
  CHECK(w2.at("recovered") == true);
  CHECK(offsets_of(back.drain()) == std::vector<long long>{2, 3});
}

TEST_CASE("gateway: a SUBSCRIBE Redis refuses is retried; the session then gets what it missed") {
  redis_server redis;
  const auto url = gateway_acl_user(redis);
  gateway_proc gw(url, redis, {"--dev-auth"}, with_key());
  auto rp = redis.port();
  sync_redis r(rp);
  const auto name = "pushonce-gateway:" + gw.d.id_of(*gw.proc);

  ws_client live;
  hello(live, gw.port, "alice");
  CHECK(deliver(rp, "alice", "4096", "{}") == 1);
  CHECK(offsets_of(live.drain()) == std::vector<long long>{1});

  // The gateway's Pub/Sub link is cut while its Redis user may not subscribe.
  const auto all = connections_named(r, name, false).size();
  const auto sub = connections_named(r, name, true);
  REQUIRE(sub.size() == 1);
  r.cmd({"ACL", "SETUSER", "gw", "-subscribe"});
  CHECK(r.integer({"CLIENT", "KILL", "ID", sub.front()}) == 1);
  REQUIRE(wait_until([&] { return connections_named(r, name, false).size() == all; }, 10s));
  for (long long i = 2; i <= 22; ++i)
    CHECK(deliver(rp, "alice", std::to_string(4096 * i), "{}") == i);

  // Subscribing is allowed again: the session gets every message, in order, and stays open.
  r.cmd({"ACL", "SETUSER", "gw", "+subscribe"});
  CHECK_MESSAGE(offsets_until(live, 22, 15s) == range(2, 22), gw.d.digest());
  CHECK(deliver(rp, "alice", std::to_string(4096 * 23), "{}") == 23);
  CHECK(offsets_until(live, 23, 5s) == std::vector<long long>{23});
  CHECK(!live.closed());
  CHECK(connections_named(r, name, true).size() == 1);
  CHECK_MESSAGE(gw.d.logs().find("refused to subscribe") != std::string::npos, gw.d.logs());
}

}  // namespace test_gateway_e2e
