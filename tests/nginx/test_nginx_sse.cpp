// SSE through nginx (deploy/nginx/pushonce.conf, run by deploy/nginx/private-nginx.sh): a
// leader, a worker and two gateways; the SSE client and its ops go only to nginx. The stream
// is passed on unbuffered, and the ops reach the gateway holding the stream.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sse_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_nginx_sse {

namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::http_request;
using pushonce::test::int_field;
using pushonce::test::sse_client;
using pushonce::test::str_field;
using pushonce::test::wait_until;
using kind = pushonce::test::deployment::kind;

namespace {

struct sse_nginx_front {
  explicit sse_nginx_front(pushonce::test::deployment& d) : port(pushonce::test::free_port()) {
    std::vector<std::string> args{
        std::string(PUSHONCE_SOURCE_DIR) + "/deploy/nginx/private-nginx.sh",
        "--dir",
        dir.path() + "/nginx",
        "--port",
        std::to_string(port),
        "--tls-port",
        std::to_string(pushonce::test::free_port())};
    for (auto* g : d.running(kind::gateway)) {
      args.push_back("--gateway");
      args.push_back("127.0.0.1:" + std::to_string(d.port_of(*g)));
    }
    proc = std::make_unique<pushonce::test::process>("bash", args);
    bool up =
        wait_until([&] { return http_request("127.0.0.1", port, "GET", "/healthz").status == 200; },
                   10s, 50ms);
    INFO("nginx stderr: ", proc->stderr_text());
    REQUIRE(up);
  }
  ~sse_nginx_front() { proc->stop(5s); }
  pushonce::test::temp_dir dir{"pushonce-nginx-sse"};
  std::uint16_t port;
  std::unique_ptr<pushonce::test::process> proc;
};

struct sse_stack : pushonce::test::deployment {
  explicit sse_stack(const std::string& what) : pushonce::test::deployment("ngxsse", what) {
    start_leader();
    start_worker();
    start_gateway({"--dev-auth", "--id", "gw0", "--trusted-proxy", "127.0.0.1,::1"});
    start_gateway({"--dev-auth", "--id", "gw1", "--trusted-proxy", "127.0.0.1,::1"});
  }
};

}  // namespace

TEST_CASE("nginx: an SSE session and its ops through nginx") {
  sse_stack d("sse");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  sse_nginx_front ngx(d);

  sse_client c;
  REQUIRE(c.open("127.0.0.1", ngx.port, "/sse?user=frank") == 200);
  auto w = c.next();
  REQUIRE(w);
  REQUIRE(w->event == "welcome");
  auto welcome = json::parse(w->data).as_object();
  const auto session = str_field(welcome, "session");
  const auto epoch = str_field(welcome, "epoch");

  for (int n = 1; n <= 3; ++n) d.publish("frank", "{\"n\":" + std::to_string(n) + "}");
  for (long long want = 1; want <= 3; ++want) {
    auto e = c.next();
    REQUIRE_MESSAGE(e, "expected message " << want);
    CHECK(e->event.empty());
    CHECK(e->id == epoch + ":" + std::to_string(want));
    CHECK(int_field(json::parse(e->data).as_object(), "offset") == want);
  }
  CHECK_FALSE(c.next(300ms));  // no duplicate

  // Every op reaches the gateway of the stream (the same upstream hash).
  for (int i = 0; i < 6; ++i) {
    auto pong = http_request("127.0.0.1", ngx.port, "POST", "/sse/op",
                             R"({"session":")" + session + R"(","user":"frank","op":"ping"})");
    REQUIRE(pong.status == 200);
    CHECK(str_field(json::parse(pong.body).as_object(), "type") == "pong");
  }
  auto joined = http_request("127.0.0.1", ngx.port, "POST", "/sse/op",
                             R"({"session":")" + session + R"(","user":"frank","op":"join"})");
  REQUIRE(joined.status == 200);
  auto j = json::parse(joined.body).as_object();
  INFO(joined.body);
  CHECK(str_field(j, "type") == "joined");
}

}  // namespace test_nginx_sse
