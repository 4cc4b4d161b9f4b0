// Per-address limits behind nginx (deploy/nginx/pushonce.conf keeps upstream connections
// alive and reuses one for many clients): with --trusted-proxy naming nginx, each request
// and each upgrade is counted under the client nginx names in X-Forwarded-For, not under
// the client whose request first used the upstream connection.

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_nginx_addresses_nginx {

using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {

// A private nginx in front of one gateway.
struct one_nginx {
  one_nginx(std::uint16_t gateway_port) : port(free_port()) {
    proc = std::make_unique<process>(
        "bash",
        std::vector<std::string>{
            std::string(PUSHONCE_SOURCE_DIR) + "/deploy/nginx/private-nginx.sh", "--dir",
            dir.path() + "/nginx", "--port", std::to_string(port), "--tls-port",
            std::to_string(free_port()), "--gateway", "127.0.0.1:" + std::to_string(gateway_port)});
    up =
        wait_until([&] { return http_request("127.0.0.1", port, "GET", "/healthz").status == 200; },
                   10s, 50ms);
  }
  ~one_nginx() { proc->stop(5s); }
  temp_dir dir{"pushonce-nginx"};
  std::uint16_t port;
  std::unique_ptr<process> proc;
  bool up = false;
};

// A session through nginx as the client `from` (nginx appends the loopback peer to the
// X-Forwarded-For it is given: the gateway walks back past it to `from`).
std::unique_ptr<ws_client> session(std::uint16_t port, const std::string& from,
                                   const std::string& user) {
  auto c = std::make_unique<ws_client>();
  c->connect("127.0.0.1", port, "/ws", {{"X-Forwarded-For", from}});
  REQUIRE(c->send(hello_frame(user)));
  auto w = c->receive(5s);
  REQUIRE(w);
  REQUIRE(w->find("welcome") != std::string::npos);
  return c;
}

}  // namespace

TEST_CASE("nginx: sessions of two clients over reused upstream connections count as themselves") {
  deployment d("ngxaddr", "reuse");
  auto& gw = d.start_gateway(
      {"--dev-auth", "--trusted-proxy", "127.0.0.1,::1", "--max-sessions-per-ip", "2"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  one_nginx ngx(d.port_of(gw));
  INFO("nginx: ", ngx.proc->stderr_text());
  REQUIRE(ngx.up);
  const std::string a = "198.51.100.10", b = "203.0.113.20";

  // Client A's plain requests leave idle keep-alive upstream connections in nginx's pool;
  // A's and B's upgrades then go over them.
  for (int i = 0; i < 6; ++i)
    REQUIRE(http_request("127.0.0.1", ngx.port, "GET", "/healthz", {}, {{"X-Forwarded-For", a}})
                .status == 200);
  auto a1 = session(ngx.port, a, "ann1");
  auto a2 = session(ngx.port, a, "ann2");
  ws_client a3;  // A is at its cap of 2
  CHECK_THROWS_WITH(a3.connect("127.0.0.1", ngx.port, "/ws", {{"X-Forwarded-For", a}}),
                    doctest::Contains("503"));
  for (int i = 0; i < 6; ++i)
    REQUIRE(http_request("127.0.0.1", ngx.port, "GET", "/healthz", {}, {{"X-Forwarded-For", a}})
                .status == 200);
  // B is another client: its two sessions are its own, whatever connection they reuse
  auto b1 = session(ngx.port, b, "bob1");
  auto b2 = session(ngx.port, b, "bob2");
  ws_client b3;
  CHECK_THROWS_WITH(b3.connect("127.0.0.1", ngx.port, "/ws", {{"X-Forwarded-For", b}}),
                    doctest::Contains("503"));
}

}  // namespace test_nginx_addresses_nginx
