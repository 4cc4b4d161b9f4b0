// The bad-input suite (docs/security.md): every row of the table that is about client input,
// against the real programs (a leader, a worker, gateways), each while a witness session on
// the same gateway keeps receiving its messages: after every row a message is published to
// the witness and must arrive, and at the end the witness has every offset exactly once.
// The rows are grouped into cases by kind (frames and hellos, floods, connection limits,
// publish bodies, a slow reader), each case on a system of its own.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bad_input_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* api_key = "bad-input-key";
constexpr const char* admin_token = "bad-input-admin";

// A plain TCP connection for what ws_client cannot do: keep an HTTP connection open, send
// WebSocket frames and never read.
class raw_conn {
 public:
  explicit raw_conn(std::uint16_t port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~raw_conn() { ::close(fd_); }
  bool send(const std::string& s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // Headers and the Content-Length body of one response ("" when the connection ended).
  std::string response() {
    std::string out;
    char c;
    while (out.find("\r\n\r\n") == std::string::npos) {
      if (::recv(fd_, &c, 1, 0) != 1) return out;
      out += c;
    }
    auto at = out.find("Content-Length: ");
    std::size_t n = at == std::string::npos ? 0 : std::stoul(out.substr(at + 16));
    std::string body(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      auto r = ::recv(fd_, body.data() + got, n - got, 0);
      if (r <= 0) break;
      got += r;
    }
    return out + body;
  }
  // True when the peer closed the connection (EOF or reset) within the receive timeout.
  bool ended() {
    char c;
    return ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  int fd_ = -1;
};

std::string get(const std::string& path, const std::string& xff = {}) {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" +
         (xff.empty() ? "" : "X-Forwarded-For: " + xff + "\r\n") + "\r\n";
}

// One masked client text frame (RFC 6455 5.3; the mask is all zero bits: XOR leaves it).
std::string ws_frame(const std::string& text) {
  std::string f;
  f += static_cast<char>(0x81);
  if (text.size() < 126) {
    f += static_cast<char>(0x80 | text.size());
  } else {
    f += static_cast<char>(0x80 | 126);
    f += static_cast<char>(text.size() >> 8);
    f += static_cast<char>(text.size() & 0xff);
  }
  f += std::string(4, '\0');
  return f + text;
}

std::string str(const json::object& o, const char* k) {
  return str_field(o, k);
}

std::optional<json::object> next(ws_client& c, std::chrono::milliseconds t = 5s) {
  auto f = c.receive(t);
  if (!f) return std::nullopt;
  return json::parse(*f).as_object();
}

// The first frame of `type` (others skipped), or nothing within the time.
std::optional<json::object> next_of(ws_client& c, std::string_view type,
                                    std::chrono::milliseconds t = 5s) {
  auto end = std::chrono::steady_clock::now() + t;
  while (std::chrono::steady_clock::now() < end) {
    auto o = next(c, 200ms);
    if (o && str(*o, "type") == type) return o;
    if (c.closed()) break;
  }
  return std::nullopt;
}

std::unique_ptr<ws_client> session(std::uint16_t port, const std::string& user,
                                   const headers& extra = {}) {
  auto c = std::make_unique<ws_client>();
  c->connect("127.0.0.1", port, "/ws", extra);
  REQUIRE(c->send(hello_frame(user)));
  REQUIRE(next_of(*c, "welcome"));
  return c;
}

long long metric(std::uint16_t port, const std::string& name) {
  auto r = http_request("127.0.0.1", port, "GET", "/metrics", {},
                        {{"Authorization", bearer(admin_token)}}, 5s);
  auto at = r.body.find("\n" + name + "{");
  if (at == std::string::npos) return -1;
  auto sp = r.body.find("} ", at);
  return std::stoll(r.body.substr(sp + 2));
}

long long cmdstat_calls(sync_redis& r, const std::string& cmd) {
  auto info = r.text({"INFO", "commandstats"});
  auto at = info.find("cmdstat_" + cmd + ":calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + cmd.size() + 15));
}

// One system for a group of rows: a leader, a worker and a gateway with small limits, so that
// each row is reached quickly, and a witness session on that gateway. 127.0.0.1 is a trusted
// proxy, so clients that send X-Forwarded-For count as other addresses than the witness.
struct bad_input_system {
  deployment d;
  std::uint16_t gw = 0;
  std::unique_ptr<ws_client> witness;
  int round = 0;
  std::vector<long long> offsets;

  explicit bad_input_system(const std::string& what)
      : d("badin", what,
          {{"PUSHONCE_API_KEY", api_key},
           {"PUSHONCE_ADMIN_TOKEN", admin_token},
           {"PUSHONCE_JWT_SECRET", "bad-input-secret-of-at-least-32-bytes!"}}) {
    d.start_leader();
    d.start_worker();
    gw = d.port_of(d.start_gateway(
        {"--dev-auth", "--trusted-proxy", "127.0.0.1", "--max-connections-per-ip", "20",
         "--max-sessions-per-ip", "10", "--max-sessions-per-user", "2", "--close-timeout-ms",
         "2000", "--http-idle-timeout-ms", "1000", "--http-max-requests", "3", "--metrics-auth"}));
    REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
    witness = session(gw, "witness");
  }

  // After each row: a message published to the witness must arrive.
  void still_serving(const std::string& after) {
    INFO("after: ", after);
    ++round;
    d.publish("witness", "{\"round\":" + std::to_string(round) + "}");
    auto m = next_of(*witness, "message", 10s);
    REQUIRE_MESSAGE(m, d.digest());
    offsets.push_back(int_field(*m, "offset"));
    CHECK(int_field(m->at("data").as_object(), "round") == round);
  }

  // At the end: the witness got every message once, in order.
  void witness_got_each_once() {
    std::vector<long long> want;
    for (int i = 1; i <= round; ++i) want.push_back(i);
    CHECK(offsets == want);
    CHECK_FALSE(witness->receive(300ms));
  }
};

}  // namespace

TEST_CASE(
    "bad input: malformed frames and hellos: error frames or close 1008/1009, the witness is "
    "served") {
  bad_input_system s("frames");

  {  // bad JSON and an unknown op: error frames, the session stays open
    auto c = session(s.gw, "frank");
    REQUIRE(c->send("{not json"));
    auto e = next(*c);
    REQUIRE(e);
    CHECK(str(*e, "code") == "bad_request");
    REQUIRE(c->send(R"({"op":"dance"})"));
    e = next(*c);
    REQUIRE(e);
    CHECK(str(*e, "code") == "unknown_op");
    REQUIRE(c->send(R"({"op":"ping"})"));
    CHECK(next_of(*c, "pong"));
  }
  s.still_serving("bad JSON, unknown op");

  {  // a bad token (a secret is set, so even --dev-auth verifies it): closed 1008
    ws_client c;
    c.connect("127.0.0.1", s.gw);
    REQUIRE(c.send(R"({"op":"hello","token":"not.a.jwt"})"));
    CHECK(c.wait_closed(5s));
    CHECK(c.close_code() == 1008);
  }
  s.still_serving("bad token");

  {  // a since offset the scripts would refuse (16 digits): bad_request, then closed 1008
    ws_client c;
    c.connect("127.0.0.1", s.gw);
    REQUIRE(
        c.send(R"({"op":"hello","user":"hugo","since":{"epoch":"e","offset":1000000000000000}})"));
    auto e = next(c);
    REQUIRE(e);
    CHECK(str(*e, "code") == "bad_request");
    CHECK(c.wait_closed(5s));
    CHECK(c.close_code() == 1008);
  }
  s.still_serving("since offset out of range");

  {  // a frame over 64 KiB: closed 1009
    auto c = session(s.gw, "gina");
    c->send(R"({"op":"ping","pad":")" + std::string(65 * 1024, 'x') + "\"}");
    CHECK(c->wait_closed(5s));
    CHECK(c->close_code() == 1009);
  }
  s.still_serving("oversized frame");

  s.witness_got_each_once();
}

TEST_CASE(
    "bad input: frame, join/leave and health/metrics floods are limited, the witness is served") {
  bad_input_system s("floods");

  {  // a frame flood: error rate_limited, then closed 1008
    auto c = session(s.gw, "henry");
    for (int i = 0; i < 1000 && !c->closed(); ++i) c->send(R"({"op":"ping"})", 1s);
    bool limited = false;
    while (auto f = c->receive(2s)) {
      auto o = json::parse(*f).as_object();
      if (str(o, "type") == "error" && str(o, "code") == "rate_limited") {
        limited = true;
        CHECK(str(o, "op") == "ping");
      }
    }
    // (the client may see the close before the error frames it did not read yet)
    CHECK((limited || metric(s.gw, "pushonce_gateway_rate_limited_frames_total") > 0));
    CHECK(c->wait_closed(5s));
    CHECK(c->close_code() == 1008);
  }
  s.still_serving("frame flood");

  {  // a join/leave flood: error rate_limited for the ops over the bucket, still open
    auto c = session(s.gw, "ivy");
    int limited = 0;
    for (int i = 0; i < 30; ++i) {
      REQUIRE(c->send(i % 2 ? R"({"op":"leave","queue":"default"})"
                            : R"({"op":"join","queue":"default"})"));
      auto o = next(*c);
      REQUIRE(o);
      if (str(*o, "code") == "rate_limited") ++limited;
    }
    CHECK(limited >= 5);
    CHECK_FALSE(c->closed());
    REQUIRE(c->send(R"({"op":"ping"})"));
    CHECK(next_of(*c, "pong"));
  }
  s.still_serving("join/leave flood");

  {  // a /healthz and /metrics flood runs at most about one Redis command a second
    auto pings = cmdstat_calls(s.d.redis(), "ping");
    auto hgetalls = cmdstat_calls(s.d.redis(), "hgetall");
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) {
      raw_conn c(s.gw);
      REQUIRE(c.send(get("/healthz")));
      CHECK(c.response().rfind("HTTP/1.1 200", 0) == 0);
      metric(s.gw, "pushonce_gateway_sessions");
    }
    auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto extra_pings = cmdstat_calls(s.d.redis(), "ping") - pings;
    auto extra_hgetalls = cmdstat_calls(s.d.redis(), "hgetall") - hgetalls;
    INFO("200 of each in ", secs, " s: ", extra_pings, " PING, ", extra_hgetalls, " HGETALL");
    // Uncached, each request would run its own: 200 of each. The subscribers' keep-alive
    // PINGs (a few a second in all) count here too.
    CHECK(extra_pings < 40);
    CHECK(extra_hgetalls < 40);
    // /metrics is behind the admin token (--metrics-auth)
    CHECK(http_request("127.0.0.1", s.gw, "GET", "/metrics").status == 401);
  }
  s.still_serving("health and metrics flood");

  s.witness_got_each_once();
}

TEST_CASE(
    "bad input: sessions per user and per address, connections per address, keep-alive caps") {
  bad_input_system s("limits");

  {  // sessions of one user over --max-sessions-per-user 2: the third is closed 1008
    auto a = session(s.gw, "jack");
    auto b = session(s.gw, "jack");
    ws_client c;
    c.connect("127.0.0.1", s.gw);
    REQUIRE(c.send(R"({"op":"hello","user":"jack"})"));
    CHECK(c.wait_closed(5s));
    CHECK(c.close_code() == 1008);
    CHECK(c.close_reason().find("too many sessions") != std::string::npos);
  }
  s.still_serving("sessions per user");

  {  // sessions of one address over --max-sessions-per-ip 10: 503 before the upgrade
    headers from{{"X-Forwarded-For", "203.0.113.9"}};
    std::vector<std::unique_ptr<ws_client>> held;
    for (int i = 0; i < 10; ++i) held.push_back(session(s.gw, "kim" + std::to_string(i), from));
    ws_client over;
    CHECK_THROWS_WITH(over.connect("127.0.0.1", s.gw, "/ws", from), doctest::Contains("503"));
    // The witness's address (the peer itself) is another address: not refused.
    INFO("sessions open: ", metric(s.gw, "pushonce_gateway_sessions"));
    auto other = session(s.gw, "kim-local");
  }
  s.still_serving("sessions per address");

  {  // connections of one address over --max-connections-per-ip 20: 503
    std::vector<std::unique_ptr<raw_conn>> held;
    for (int i = 0; i < 20; ++i) {
      held.push_back(std::make_unique<raw_conn>(s.gw));
      REQUIRE(held.back()->send(get("/healthz", "198.51.100.7")));
      CHECK(held.back()->response().rfind("HTTP/1.1 200", 0) == 0);
    }
    raw_conn over(s.gw);
    REQUIRE(over.send(get("/healthz", "198.51.100.7")));
    auto r = over.response();
    CHECK(r.rfind("HTTP/1.1 503", 0) == 0);
    CHECK(r.find("too many connections from this address") != std::string::npos);
    CHECK(over.ended());
  }
  s.still_serving("connections per address");

  {  // keep-alive: closed after --http-idle-timeout-ms 1000, and after --http-max-requests 3
    raw_conn idle(s.gw);
    REQUIRE(idle.send(get("/healthz")));
    CHECK(idle.response().rfind("HTTP/1.1 200", 0) == 0);
    auto t0 = std::chrono::steady_clock::now();
    CHECK(idle.ended());
    CHECK(std::chrono::steady_clock::now() - t0 < 3s);
    raw_conn many(s.gw);
    for (int i = 1; i <= 3; ++i) {
      REQUIRE(many.send(get("/healthz")));
      auto r = many.response();
      CHECK(r.rfind("HTTP/1.1 200", 0) == 0);
      if (i == 3) CHECK(r.find("Connection: close") != std::string::npos);
    }
    CHECK(many.ended());
  }
  s.still_serving("keep-alive idle and request cap");

  s.witness_got_each_once();
}

TEST_CASE(
    "bad input: publish bodies: over the size cap, chunked, large then small, over the rate "
    "limit") {
  bad_input_system s("publish");

  {  // data over 64 KiB: 413 too_large, nothing of the batch published; the CLI refuses it
    auto lee = session(s.gw, "lee");
    std::string big = "\"" + std::string(70 * 1024, 'b') + "\"";
    auto body = R"({"messages":[{"user":"lee","data":1},{"user":"lee","data":)" + big + "}]}";
    auto r = http_request("127.0.0.1", s.gw, "POST", "/api/publish", body,
                          {{"Authorization", bearer(api_key)}});
    CHECK(r.status == 413);
    CHECK(json::parse(r.body).as_object().at("error").as_string() == "too_large");
    auto cli = s.d.admin({"publish", "lee", big, "--json"});
    CHECK(cli.code() == 2);
    CHECK(cli.error() == "too_large");
    CHECK_FALSE(lee->receive(1s));  // nothing of either was delivered
  }
  s.still_serving("data over the size cap");

  {  // one keep-alive connection: a chunked batch, a 600 KB batch (the read buffer grows to
     // the body's length), then a small one (the buffer was given back in between); each
     // answered 200 and delivered. The third request meets --http-max-requests 3.
    auto mo = session(s.gw, "mo");
    auto post = [](const std::string& head, const std::string& body) {
      return "POST /api/publish HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
             std::string(api_key) + "\r\nContent-Type: application/json\r\n" + head + "\r\n" + body;
    };
    auto chunk = [](const std::string& part) {
      char len[16];
      std::snprintf(len, sizeof len, "%zx\r\n", part.size());
      return len + part + "\r\n";
    };
    raw_conn c(s.gw);
    std::string first = R"({"messages":[{"user":"mo","data":"c1"},)";
    std::string second = R"({"user":"mo","data":"c2"}]})";
    REQUIRE(
        c.send(post("Transfer-Encoding: chunked\r\n", chunk(first) + chunk(second) + "0\r\n\r\n")));
    CHECK(c.response().rfind("HTTP/1.1 200", 0) == 0);
    std::string big = R"({"messages":[)";
    std::string pad(60 * 1024, 'p');
    for (int i = 0; i < 10; ++i)
      big += (i ? "," : "") + std::string(R"({"user":"mo","data":")") + pad + "\"}";
    big += "]}";
    REQUIRE(c.send(post("Content-Length: " + std::to_string(big.size()) + "\r\n", big)));
    CHECK(c.response().rfind("HTTP/1.1 200", 0) == 0);
    std::string small = R"({"user":"mo","data":"last"})";
    REQUIRE(c.send(post("Content-Length: " + std::to_string(small.size()) + "\r\n", small)));
    auto r = c.response();
    CHECK(r.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(r.find("Connection: close") != std::string::npos);
    // Offsets follow delivery, not publication (docs/protocol.md): the small batch may pass
    // the large one.
    int got = 0, big_ones = 0;
    bool last = false;
    while (got < 13) {
      auto f = mo->receive(5s);
      if (!f) break;
      if (json::parse(*f).as_object().at("type").as_string() != "message") continue;
      ++got;
      if (f->size() > 60 * 1024) ++big_ones;
      if (f->find("\"last\"") != std::string::npos) last = true;
    }
    CHECK(got == 13);
    CHECK(big_ones == 10);
    CHECK(last);
  }
  s.still_serving("keep-alive publish bodies: chunked, large, small");

  {  // the publish API over the API key's rate limit: 429 with Retry-After and a JSON body
    auto limited = s.d.port_of(
        s.d.start_gateway({"--dev-auth", "--publish-rate", "1", "--publish-burst", "3"}));
    REQUIRE_MESSAGE(s.d.wait_ready(), s.d.ready_failure());
    int ok = 0, refused = 0;
    for (int i = 0; i < 8; ++i) {
      raw_conn c(limited);
      std::string body = R"({"user":"mia","data":)" + std::to_string(i) + "}";
      REQUIRE(c.send("POST /api/publish HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                     std::string(api_key) + "\r\nContent-Type: application/json\r\n" +
                     "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
      auto r = c.response();
      if (r.rfind("HTTP/1.1 200", 0) == 0) ++ok;
      if (r.rfind("HTTP/1.1 429", 0) == 0) {
        ++refused;
        CHECK(r.find("Retry-After: 1") != std::string::npos);
        CHECK(r.find(R"("error":"rate_limited")") != std::string::npos);
      }
    }
    CHECK(ok >= 3);
    CHECK(ok <= 5);
    CHECK(refused == 8 - ok);
  }
  s.still_serving("publish API rate limit");

  s.witness_got_each_once();
}

TEST_CASE("bad input: a slow reader's session is dropped after the close deadline") {
  bad_input_system s("slow");

  {  // a slow reader: it sends but never reads; its session is dropped after the close
     // deadline (here 2 s) instead of living on after its close
    auto before = metric(s.gw, "pushonce_gateway_sessions");
    raw_conn slow(s.gw, 4096);
    REQUIRE(slow.send(
        "GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
    CHECK(slow.response().rfind("HTTP/1.1 101", 0) == 0);
    REQUIRE(slow.send(ws_frame(R"({"op":"hello","user":"slowpoke"})")));
    CHECK(wait_until([&] { return metric(s.gw, "pushonce_gateway_sessions") == before + 1; }, 5s));
    // ~10 MB for it: more than the socket buffers and the 4 MiB send queue hold
    std::string data = "\"" + std::string(60 * 1024, 's') + "\"";
    for (int b = 0; b < 12; ++b) {
      std::string body = R"({"messages":[)";
      for (int i = 0; i < 15; ++i)
        body += (i ? "," : "") + (R"({"user":"slowpoke","data":)" + data + "}");
      auto r = http_request("127.0.0.1", s.gw, "POST", "/api/publish", body + "]}",
                            {{"Authorization", bearer(api_key)}});
      REQUIRE(r.status == 200);
    }
    CHECK(wait_until(
        [&] {
          if (metric(s.gw, "pushonce_gateway_sessions") <= before) return true;
          slow.send(ws_frame(R"({"op":"ping"})"));  // it keeps sending
          return false;
        },
        20s, 200ms, 200ms));
    CHECK(metric(s.gw, "pushonce_gateway_sessions") == before);
    CHECK(metric(s.gw, "pushonce_gateway_close_deadline_drops_total") >= 1);
  }
  s.still_serving("slow reader");

  s.witness_got_each_once();
}

}  // namespace test_bad_input_e2e
