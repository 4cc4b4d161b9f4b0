// End-to-end: the gateway's admission, HTTP and token rules as an attacker meets them
// (docs/security.md): silent connections counted from accept and closed at the header
// deadline, per-address caps with real client addresses (client_hosts), HEAD and bodies,
// failed API key and admin token attempts, the Origin of a --dev-auth upgrade, probe
// floods, token claims and an identity provider's key set rotated on SIGHUP.
#include <doctest/doctest.h>
#include <jwt.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/client_hosts.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/signing_keys.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_hardening_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* api_key = "hardening-api-key-0123";
constexpr const char* admin_token = "hardening-admin-token-0123";

std::string get(const std::string& path, const std::string& extra = {}) {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

bool status_is(const std::string& response, int status) {
  return response.rfind("HTTP/1.1 " + std::to_string(status), 0) == 0;
}

// A gateway started by hand (deployment::start_gateway listens on loopback only).
struct open_gateway {
  open_gateway(deployment& d, std::vector<std::string> args) : port(free_port()) {
    args.insert(args.begin(), {"--listen", "0.0.0.0:" + std::to_string(port), "--id", "gopen"});
    proc = std::make_unique<process>(program_path("pushonce-gateway"), args, d.env());
    ready = wait_until(
        [&] {
          return http_request("127.0.0.1", port, "GET", "/healthz", {}, {}, 1s).status == 200;
        },
        10s);
  }
  std::uint16_t port;
  std::unique_ptr<process> proc;
  bool ready = false;
};

long long metric(std::uint16_t port, const std::string& name) {
  auto r = http_request("127.0.0.1", port, "GET", "/metrics", {},
                        {{"Authorization", std::string("Bearer ") + admin_token}}, 5s);
  auto at = r.body.find("\n" + name + "{");
  if (at == std::string::npos) return -1;
  auto sp = r.body.find("} ", at);
  return std::stoll(r.body.substr(sp + 2));
}

environment secrets() {
  return {{"PUSHONCE_API_KEY", api_key}, {"PUSHONCE_ADMIN_TOKEN", admin_token}};
}

}  // namespace

TEST_CASE("hardening: silent connections count from accept and close at the header deadline") {
  client_hosts hosts(2);
  if (!hosts.ok()) {
    MESSAGE("skipped: cannot create a network namespace and a veth pair (needs root)");
    return;
  }
  deployment d("harden", "silent", secrets());
  // A 2.5 s header deadline (5 s by default): the steps below take milliseconds.
  open_gateway gw(
      d, {"--dev-auth", "--max-connections-per-ip", "5", "--http-header-timeout-ms", "2500"});
  REQUIRE_MESSAGE(gw.ready, gw.proc->stderr_text());

  // Five connections from one client host that never send a byte hold its five slots.
  std::vector<std::unique_ptr<raw_http>> silent;
  for (int i = 0; i < 5; ++i) {
    silent.push_back(std::make_unique<raw_http>(hosts.connect_from(0, gw.port)));
    REQUIRE(silent.back()->connected());
  }
  raw_http over(hosts.connect_from(0, gw.port));
  REQUIRE(over.connected());
  REQUIRE(over.send(get("/healthz")));
  auto r = over.response();
  CHECK(status_is(r, 503));
  CHECK(r.find("too many connections from this address") != std::string::npos);

  // Another client host, and a loopback session, are served meanwhile.
  raw_http other(hosts.connect_from(1, gw.port));
  REQUIRE(other.send(get("/healthz")));
  CHECK(status_is(other.response(), 200));
  ws_client witness;
  witness.connect("127.0.0.1", gw.port);
  REQUIRE(witness.send(hello_frame("witness")));
  auto welcome = witness.receive(5s);
  REQUIRE(welcome);
  CHECK(welcome->find("welcome") != std::string::npos);

  // The header deadline (well before the 15 s keep-alive idle timeout) closes the silent
  // ones; the client host is served again.
  for (auto& c : silent) CHECK(c->ended(9s));
  raw_http again(hosts.connect_from(0, gw.port));
  REQUIRE(again.send(get("/healthz")));
  CHECK(status_is(again.response(), 200));
  CHECK(gw.proc->stop() == 0);
}

TEST_CASE("hardening: sessions per address counted for real client hosts") {
  client_hosts hosts(2);
  if (!hosts.ok()) {
    MESSAGE("skipped: cannot create a network namespace and a veth pair (needs root)");
    return;
  }
  deployment d("harden", "hosts", secrets());
  open_gateway gw(d, {"--dev-auth", "--max-sessions-per-ip", "2"});
  REQUIRE_MESSAGE(gw.ready, gw.proc->stderr_text());
  const std::string upgrade =
      "GET /ws HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  auto open_from = [&](int host) {
    auto c = std::make_unique<raw_http>(hosts.connect_from(host, gw.port));
    REQUIRE(c->connected());
    REQUIRE(c->send(upgrade));
    return c;
  };
  std::vector<std::unique_ptr<raw_http>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(open_from(0));
    CHECK(status_is(held.back()->header(), 101));
  }
  auto over = open_from(0);
  auto refused = over->response();
  CHECK(status_is(refused, 503));
  CHECK(refused.find("too many sessions from this address") != std::string::npos);
  auto other = open_from(1);  // another client host has its own count
  CHECK(status_is(other->header(), 101));
  CHECK(gw.proc->stop() == 0);
}

TEST_CASE("hardening: HEAD answers carry no body; a GET body is refused before it is read") {
  deployment d("harden", "http", secrets());
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  {  // HEAD then GET on one keep-alive connection: the GET's answer is the next bytes
    raw_http c(port);
    REQUIRE(c.send("HEAD / HTTP/1.1\r\nHost: t\r\n\r\n" + get("/healthz")));
    auto head = c.header();
    CHECK(status_is(head, 200));
    CHECK(content_length(head) > 0);  // the length of what GET would send
    auto next = c.response();
    CHECK(status_is(next, 200));
    CHECK(next.substr(next.size() - 2) == "ok");
  }
  {  // a GET with a body: 400 without reading it, the connection closed
    raw_http c(port);
    REQUIRE(c.send(get("/healthz", "Content-Length: 200000\r\n")));
    auto r = c.response();
    CHECK(status_is(r, 400));
    CHECK(r.find("takes no body") != std::string::npos);
    CHECK(c.ended());
  }
  {  // the same with a chunked body
    raw_http c(port);
    REQUIRE(c.send(get("/", "Transfer-Encoding: chunked\r\n") + "10\r\n0123456789abcdef\r\n"));
    CHECK(status_is(c.response(), 400));
    CHECK(c.ended());
  }
}

TEST_CASE("hardening: a chunked /api/publish body over 1 MiB is refused as it streams in") {
  deployment d("harden", "chunked", secrets());
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  raw_http c(port);
  REQUIRE(c.send("POST /api/publish HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                 std::string(api_key) +
                 "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"));
  // 64 KiB chunks until the answer comes: it must come by the 17th (1 MiB + 64 KiB).
  std::string chunk = "10000\r\n" + std::string(64 * 1024, 'x') + "\r\n";
  int sent = 0;
  std::string answer;
  while (sent < 40 && answer.empty()) {
    if (!c.send(chunk)) break;
    ++sent;
    answer = c.header(sent >= 16 ? 2s : 50ms);
  }
  if (answer.empty()) answer = c.header(2s);
  INFO("chunks sent: ", sent);
  CHECK(status_is(answer, 413));
  CHECK(sent <= 17);
}

TEST_CASE("hardening: wrong API keys and admin tokens are counted, logged and slowed per address") {
  deployment d("harden", "bearer", secrets());
  {  // a secret that short is a mistake: warned at start, and still served (the contract
     // sets no minimum)
    process weak(program_path("pushonce-gateway"),
                 {"--dev-auth", "--listen", "127.0.0.1:" + std::to_string(free_port())},
                 {{"PUSHONCE_REDIS", d.url()}, {"PUSHONCE_API_KEY", "abc123"}});
    CHECK(wait_until(
        [&] { return weak.stderr_text().find("has 6 bytes: easy to guess") != std::string::npos; },
        10s, 50ms));
    CHECK(weak.running());
  }
  auto port = d.port_of(d.start_gateway({"--dev-auth", "--trusted-proxy", "127.0.0.1"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto& gw = d.get(deployment::kind::gateway);
  auto post = [&](const std::string& from, const std::string& key) {
    raw_http c(port);
    std::string body = R"({"user":"ann","data":1})";
    c.send("POST /api/publish HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: " + from +
           "\r\nAuthorization: Bearer " + key + "\r\nContent-Type: application/json\r\n" +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    return c.response();
  };
  int unauthorized = 0;
  std::string last;
  for (int i = 0; i < 12; ++i) {
    last = post("198.51.100.20", "wrong-key-" + std::to_string(i));
    if (status_is(last, 401)) ++unauthorized;
  }
  CHECK(unauthorized == 10);  // then 429: the key is no longer compared
  CHECK(status_is(last, 429));
  CHECK(last.find("Retry-After: ") != std::string::npos);
  CHECK(status_is(post("198.51.100.20", api_key), 429));  // even the right key, for a while
  CHECK(status_is(post("198.51.100.21", api_key), 200));  // another address is not affected
  CHECK(metric(port, "pushonce_gateway_bearer_failures_total") == 10);
  CHECK(metric(port, "pushonce_gateway_bearer_blocked_total") == 3);
  // the admin token's failures are counted in the same way
  auto status =
      http_request("127.0.0.1", port, "GET", "/api/status", {},
                   {{"Authorization", "Bearer nope"}, {"X-Forwarded-For", "198.51.100.22"}});
  CHECK(status.status == 401);
  CHECK(metric(port, "pushonce_gateway_bearer_failures_total") == 11);
  // logged with the client address, and not one line per failure
  auto log = gw.stderr_text();
  std::size_t lines = 0;
  for (auto at = log.find("missing or wrong"); at != std::string::npos;
       at = log.find("missing or wrong", at + 1))
    ++lines;
  CHECK(lines >= 1);
  CHECK(lines < 11);
  CHECK(log.find("198.51.100.20") != std::string::npos);
}

TEST_CASE(
    "hardening: --dev-auth warns that any page may open a session; --allowed-origin limits "
    "the pages") {
  deployment d("harden", "origin", secrets());
  auto& gw = d.start_gateway({"--dev-auth"});
  auto port = d.port_of(gw);
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  CHECK(gw.stderr_text().find("any web page may open a session") != std::string::npos);
  ws_client other;  // the contract: with no --allowed-origin, any origin
  other.connect("127.0.0.1", port, "/ws", {{"Origin", "https://other.example"}});
  REQUIRE(other.send(hello_frame("ann")));
  auto w = other.receive(5s);
  REQUIRE(w);
  CHECK(w->find("welcome") != std::string::npos);
  // --allowed-origin names the pages allowed; another page is refused with 403
  auto listed =
      d.port_of(d.start_gateway({"--dev-auth", "--allowed-origin", "https://app.example"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  ws_client app;
  app.connect("127.0.0.1", listed, "/ws", {{"Origin", "https://app.example"}});
  ws_client evil;
  CHECK_THROWS_WITH(evil.connect("127.0.0.1", listed, "/ws", {{"Origin", "https://evil.example"}}),
                    doctest::Contains("403"));
  ws_client tool;  // not a browser: no Origin
  tool.connect("127.0.0.1", listed);
}

TEST_CASE(
    "hardening: a /readyz and /metrics flood runs one Redis probe a second; a session is served") {
  deployment d("harden", "flood", secrets());
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  ws_client s;
  s.connect("127.0.0.1", port);
  REQUIRE(s.send(hello_frame("lat")));
  REQUIRE(s.receive(5s));
  auto calls = [&](const std::string& cmd) {
    auto info = d.redis().text({"INFO", "commandstats"});
    auto at = info.find("cmdstat_" + cmd + ":calls=");
    return at == std::string::npos ? 0LL : std::stoll(info.substr(at + cmd.size() + 15));
  };
  auto sets = calls("set");
  auto hgetalls = calls("hgetall");
  std::atomic<bool> done{false};
  std::thread flood([&] {
    for (int i = 0; i < 300 && !done; ++i) {
      http_request("127.0.0.1", port, "GET", "/readyz", {}, {}, 5s);
      http_request("127.0.0.1", port, "GET", "/metrics", {}, {}, 5s);
    }
  });
  // ping/pong round trips of the session meanwhile (printed, not asserted)
  std::vector<double> rtt;
  auto t_end = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < t_end) {
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(s.send(R"({"op":"ping"})"));
    auto f = s.receive(5s);
    REQUIRE(f);
    rtt.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    pace(20ms, "a ping every 20 ms");
  }
  done = true;
  flood.join();
  std::sort(rtt.begin(), rtt.end());
  auto extra_sets = calls("set") - sets;
  auto extra_hgetalls = calls("hgetall") - hgetalls;
  std::printf(
      "hardening flood: %zu pings during /readyz+/metrics flood, ping p50 %.2f ms, max %.2f ms;"
      " %lld SET, %lld HGETALL\n",
      rtt.size(), rtt[rtt.size() / 2], rtt.back(), extra_sets, extra_hgetalls);
  CHECK(extra_sets < 20);  // ~3 s of flood: about one each a second, not one per request
  CHECK(extra_hgetalls < 20);
}

namespace {

// An HS256 token with the given claims (a JSON object's text), through libjwt.
std::string signed_claims(const std::string& claims, const std::string& key) {
  jwt_t* j = nullptr;
  jwt_new(&j);
  jwt_add_grants_json(j, claims.c_str());
  jwt_set_alg(j, JWT_ALG_HS256, reinterpret_cast<const unsigned char*>(key.data()),
              static_cast<int>(key.size()));
  char* s = jwt_encode_str(j);
  std::string out(s);
  std::free(s);
  jwt_free(j);
  return out;
}

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("hardening: tokens — leeway, nbf, audience, issuer, maximum lifetime, --ttl overflow") {
  const std::string secret = "hardening-jwt-secret-0123456789abcdef";
  deployment d("harden", "jwt", {{"PUSHONCE_JWT_SECRET", secret}});
  auto port = d.port_of(d.start_gateway({"--jwt-audience", "pushonce", "--jwt-issuer",
                                         "https://id.example", "--jwt-max-lifetime", "86400"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto now = unix_now();
  auto hello = [&](const std::string& more_claims) {
    auto t = signed_claims(
        R"({"sub":"zoe","iss":"https://id.example","aud":"pushonce")" + more_claims + "}", secret);
    auto c = std::make_unique<ws_client>();
    c->connect("127.0.0.1", port);
    REQUIRE(c->send(R"({"op":"hello","token":")" + t + "\"}"));
    return c;
  };
  auto welcomed = [&](const std::string& more) {
    auto c = hello(more);
    auto f = c->receive(5s);
    return f && f->find("welcome") != std::string::npos;
  };
  auto refused = [&](const std::string& more, const std::string& why) {
    auto c = hello(more);
    CHECK(c->wait_closed(5s));
    CHECK(c->close_code() == 1008);
    CHECK_MESSAGE(c->close_reason().find(why) != std::string::npos, c->close_reason());
  };
  auto at = [&](long long t) { return std::to_string(t); };
  CHECK(welcomed(",\"exp\":" + at(now + 600)));
  CHECK(welcomed(",\"exp\":" + at(now - 5)));  // within the 30 s leeway
  refused(",\"exp\":" + at(now - 120), "expired");
  refused(",\"exp\":" + at(now + 600) + ",\"nbf\":" + at(now + 300), "nbf");
  refused(",\"exp\":" + at(now + 600) + ",\"iat\":" + at(now + 300), "iat");
  refused(",\"exp\":" + at(now + 30LL * 86400), "lives longer");
  {
    auto c = std::make_unique<ws_client>();
    c->connect("127.0.0.1", port);
    auto t = signed_claims(R"({"sub":"zoe","iss":"https://evil.example","aud":"pushonce","exp":)" +
                               at(now + 600) + "}",
                           secret);
    REQUIRE(c->send(R"({"op":"hello","token":")" + t + "\"}"));
    CHECK(c->wait_closed(5s));
    CHECK(c->close_reason().find("iss") != std::string::npos);
  }
  // `token --ttl` with a lifetime past the clock's range is refused, not wrapped around
  auto huge =
      d.admin({"token", "zoe", "--ttl", "9000000000000000000"}, {{"PUSHONCE_JWT_SECRET", secret}});
  CHECK(huge.code() == 2);
}

TEST_CASE("hardening: --jwt-jwks verifies an identity provider's tokens; SIGHUP rotates the keys") {
  signing_key old_key("RSA", "2026-a"), new_key("EC", "2026-b");
  temp_dir dir("pushonce-jwks");
  auto path = dir.path() + "/jwks.json";
  auto write = [&](const std::string& text) {
    std::ofstream(path + ".tmp") << text;
    std::rename((path + ".tmp").c_str(), path.c_str());
  };
  write(key_set_json({&old_key}));
  deployment d("harden", "jwks");
  auto& gw = d.start_gateway({"--jwt-jwks", path});
  auto port = d.port_of(gw);
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto claims = R"({"sub":"idp-user","exp":)" + std::to_string(unix_now() + 600) + "}";
  auto try_hello = [&](const std::string& token) {
    ws_client c;
    c.connect("127.0.0.1", port);
    REQUIRE(c.send(R"({"op":"hello","token":")" + token + "\"}"));
    auto f = c.receive(5s);
    if (f && f->find("welcome") != std::string::npos) return std::string("welcome");
    c.wait_closed(5s);
    return c.close_reason();
  };
  CHECK(try_hello(old_key.sign(claims)) == "welcome");
  CHECK(try_hello(new_key.sign(claims)).find("unknown key") != std::string::npos);
  // an HS256 token "signed" with the public key as its secret: no secret here, refused
  auto confused = try_hello(signed_claims(claims, old_key.jwk()));
  CHECK(confused.find("no JWT secret") != std::string::npos);

  write(key_set_json({&new_key}));  // the provider rotated its key
  gw.kill(SIGHUP);
  CHECK(wait_until([&] { return try_hello(new_key.sign(claims)) == "welcome"; }, 10s, 100ms));
  CHECK(try_hello(old_key.sign(claims)).find("unknown key") != std::string::npos);
  write("{not json");  // a broken file keeps the keys in force
  gw.kill(SIGHUP);
  CHECK(wait_until([&] { return gw.stderr_text().find("keeping the 1 keys") != std::string::npos; },
                   10s));
  CHECK(try_hello(new_key.sign(claims)) == "welcome");
  CHECK(gw.running());
  // a bad file at start is a usage error
  auto bad = run_cli("pushonce-gateway", {"--jwt-jwks", path, "--listen", "127.0.0.1:0"}, {}, 10s);
  CHECK(bad.code() == 2);
  CHECK(bad.run.err.find("--jwt-jwks") != std::string::npos);
}

}  // namespace test_gateway_hardening_e2e
