// The gate behind nginx (deploy/nginx/pushonce.conf location /checkout/, run by
// deploy/nginx/private-nginx.sh): a page request without a live admission is redirected to
// the waiting room with ?return= (a JSON request gets the JSON 401), a live admission
// reaches the checkout with the user, resource and admission headers, a released one is
// refused, and with no gateway answering the checkout fails closed (503) by default, or
// open with --fail-open.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/admission_keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_nginx_gate {

namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::bearer;
using pushonce::test::hello_frame;
using pushonce::test::http_request;
using pushonce::test::str_field;
using pushonce::test::wait_until;
using pushonce::test::ws_client;
using kind = pushonce::test::deployment::kind;

namespace {

// The checkout app: answers every request 200 with the X-Pushonce-* headers it received.
const char* checkout_app = R"(
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({k: self.headers.get(k, '') for k in
            ('X-Pushonce-User', 'X-Pushonce-Resource', 'X-Pushonce-Admission')}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
)";

struct nginx_gate {
  nginx_gate(pushonce::test::deployment& d, std::uint16_t checkout, bool fail_open)
      : port(pushonce::test::free_port()) {
    std::vector<std::string> args{
        std::string(PUSHONCE_SOURCE_DIR) + "/deploy/nginx/private-nginx.sh",
        "--dir",
        dir.path() + "/nginx",
        "--port",
        std::to_string(port),
        "--tls-port",
        std::to_string(pushonce::test::free_port()),
        "--checkout",
        "127.0.0.1:" + std::to_string(checkout)};
    if (fail_open) args.push_back("--fail-open");
    for (auto* g : d.running(kind::gateway)) {
      args.push_back("--gateway");
      args.push_back("127.0.0.1:" + std::to_string(d.port_of(*g)));
    }
    proc = std::make_unique<pushonce::test::process>("bash", args);
    bool up = wait_until(
        [&] { return http_request("127.0.0.1", port, "GET", "/checkout/x").status != 0; }, 10s,
        50ms);
    INFO("nginx stderr: ", proc->stderr_text());
    REQUIRE(up);
  }
  ~nginx_gate() { proc->stop(5s); }
  pushonce::test::temp_dir dir{"pushonce-nginx-gate"};
  std::uint16_t port;
  std::unique_ptr<pushonce::test::process> proc;
};

pushonce::test::http_reply page(std::uint16_t port, const std::string& cookie_token) {
  pushonce::test::headers h{{"Accept", "text/html"}};
  if (!cookie_token.empty()) h.push_back({"Cookie", "pushonce_admission=" + cookie_token});
  return http_request("127.0.0.1", port, "GET", "/checkout/pay", {}, h);
}

pushonce::test::http_reply xhr(std::uint16_t port, const std::string& cookie_token) {
  pushonce::test::headers h{{"Accept", "application/json"}};
  if (!cookie_token.empty()) h.push_back({"Cookie", "pushonce_admission=" + cookie_token});
  return http_request("127.0.0.1", port, "GET", "/checkout/api/cart", {}, h);
}

}  // namespace

TEST_CASE("nginx gate: redirect without admission, headers with one, refusal once released") {
  pushonce::test::temp_dir keys("pushonce-nginx-gate-key");
  {
    std::ofstream out(keys.file("key.pem"), std::ios::binary);
    out << pushonce::test::new_p256_private_pem();
  }
  pushonce::test::deployment d("ngx", "gate");
  d.start_leader({"--admission-key", keys.file("key.pem")});
  d.start_worker();
  auto gw = d.port_of(d.start_gateway(
      {"--dev-auth", "--admission-key", keys.file("key.pem"), "--trusted-proxy", "127.0.0.1,::1"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  const auto checkout = pushonce::test::free_port();
  pushonce::test::process app("python3", {"-c", checkout_app, std::to_string(checkout)});
  REQUIRE(wait_until([&] { return http_request("127.0.0.1", checkout, "GET", "/").status == 200; },
                     10s, 50ms));
  nginx_gate ngx(d, checkout, false);

  // No admission: a page goes to the waiting room, a JSON request gets the refusal.
  auto lost = page(ngx.port, "");
  CHECK(lost.status == 302);
  CHECK(lost.field("location").find("/?return=/checkout/pay") != std::string::npos);
  auto lost_json = xhr(ngx.port, "");
  CHECK(lost_json.status == 401);
  CHECK(str_field(json::parse(lost_json.body).as_object(), "error") == "unauthorized");

  // An admission: its token as the cookie reaches the checkout with the headers.
  auto add = d.admin({"resource", "add", "seat-9"});
  REQUIRE_MESSAGE(add.code() == 0, add.describe());
  ws_client ws;
  ws.connect("127.0.0.1", gw, "/ws");
  REQUIRE(ws.send(hello_frame("hana")));
  REQUIRE(ws.send(R"({"op":"join"})"));
  std::string token, id;
  REQUIRE(wait_until(
      [&] {
        auto f = ws.receive(100ms);
        if (!f) return false;
        auto o = json::parse(*f).as_object();
        if (str_field(o, "kind") != "assignment") return false;
        token = str_field(o.at("data").as_object(), "admission");
        id = str_field(o, "id");
        return true;
      },
      10s, 10ms));
  REQUIRE_FALSE(token.empty());
  auto in = page(ngx.port, token);
  INFO(d.digest());
  REQUIRE(in.status == 200);
  auto seen = json::parse(in.body).as_object();
  CHECK(str_field(seen, "X-Pushonce-User") == "hana");
  CHECK(str_field(seen, "X-Pushonce-Resource") == "seat-9");
  CHECK(str_field(seen, "X-Pushonce-Admission") == id);

  // Released: refused within a second (JSON 403; a page back to the waiting room).
  auto rel = d.admin({"admission", "release", id});
  REQUIRE_MESSAGE(rel.code() == 0, rel.describe());
  CHECK(wait_until([&] { return xhr(ngx.port, token).status == 403; }, 3s, 50ms));
  CHECK(page(ngx.port, token).status == 302);
}

TEST_CASE("nginx gate: no gateway answering fails closed by default, open when chosen") {
  pushonce::test::deployment d("ngx", "gatefail");
  d.start_leader();
  d.start_worker();
  d.start_gateway({"--dev-auth", "--trusted-proxy", "127.0.0.1,::1"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  const auto checkout = pushonce::test::free_port();
  pushonce::test::process app("python3", {"-c", checkout_app, std::to_string(checkout)});
  REQUIRE(wait_until([&] { return http_request("127.0.0.1", checkout, "GET", "/").status == 200; },
                     10s, 50ms));
  nginx_gate closed(d, checkout, false);
  nginx_gate open(d, checkout, true);
  d.get(kind::gateway).stop(5s);
  auto refused = page(closed.port, "any.token.here");
  CHECK(refused.status == 503);
  CHECK(str_field(json::parse(refused.body).as_object(), "error") == "unavailable");
  auto through = page(open.port, "any.token.here");
  CHECK(through.status == 200);
  CHECK(str_field(json::parse(through.body).as_object(), "X-Pushonce-User").empty());
}

}  // namespace test_nginx_gate
