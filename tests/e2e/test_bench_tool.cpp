// pushonce-bench against the real programs: a short fanout that must find every message
// delivered exactly once, the same through a gateway killed and restarted mid-run, and
// the floor stand-in told to duplicate frames, which the verifier must catch (exit 1).

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bench_tool_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* api_key = "bench-tool-key";

struct bench_system : deployment {
  bench_system() : deployment("bench", "tool", {{"PUSHONCE_API_KEY", api_key}}) {
    start_leader();
    start_worker();
    start_worker();
    ports.push_back(port_of(start_gateway({"--dev-auth"})));
    ports.push_back(port_of(start_gateway({"--dev-auth"})));
    REQUIRE_MESSAGE(wait_ready(), ready_failure());
  }
  std::string gateways() const {
    return "127.0.0.1:" + std::to_string(ports[0]) + ",127.0.0.1:" + std::to_string(ports[1]);
  }
  std::vector<std::uint16_t> ports;
};

json::object report_of(const std::string& out) {
  auto v = parse_or_null(out);
  REQUIRE_MESSAGE(v.is_object(), "not one JSON object: " << out);
  return v.as_object();
}

std::uint64_t num(const json::object& o, const char* name) {
  REQUIRE_MESSAGE(o.contains(name), name);
  return o.at(name).to_number<std::uint64_t>();
}

}  // namespace

TEST_CASE("pushonce-bench: a fanout through the real system finds every message exactly once") {
  bench_system sys;
  auto r = run_cli(
      "pushonce-bench",
      {"fanout", "--gateway", sys.gateways(), "--api-key", api_key, "--sessions", "20", "--users",
       "10", "--messages", "2000", "--rate", "1000", "--batch", "50", "--json", "--no-progress"},
      {}, 60s);
  INFO(r.describe());
  CHECK(r.code() == 0);
  auto o = report_of(r.run.out);
  CHECK(num(o, "opened") == 20);
  CHECK(num(o, "published") == 2000);
  CHECK(num(o, "expected") == 4000);  // two sessions per user
  CHECK(num(o, "delivered") == 4000);
  CHECK(num(o, "duplicates") == 0);
  CHECK(num(o, "lost") == 0);
  CHECK(num(o, "gaps") == 0);
  CHECK(num(o, "out_of_order") == 0);
  CHECK(o.at("latency").as_object().at("count").to_number<std::uint64_t>() == 4000);
}

TEST_CASE("pushonce-bench: sessions resume through a gateway killed and restarted mid-run") {
  bench_system sys;
  process bench(program_path("pushonce-bench"),
                {"fanout", "--gateway", sys.gateways(), "--api-key", api_key, "--sessions", "20",
                 "--users", "10", "--messages", "6000", "--rate", "1000", "--batch", "20", "--json",
                 "--no-progress", "--grace", "15"});
  // Kill the second gateway (sessions only; publishes go to the first) once frames flow.
  auto& victim = sys.get(deployment::kind::gateway, 1);
  auto frames_sent = [&] {
    auto r = http_request("127.0.0.1", sys.ports[1], "GET", "/metrics", {}, {}, 1s);
    auto at = r.body.find("\npushonce_gateway_frames_sent_total{");
    auto sp = at == std::string::npos ? at : r.body.find("} ", at);
    return sp == std::string::npos ? 0LL : std::stoll(r.body.substr(sp + 2));
  };
  REQUIRE_MESSAGE(wait_until([&] { return frames_sent() >= 200; }, 15s, 50ms), sys.digest());
  victim.kill(SIGKILL);
  victim.wait(5s);
  sys.start_gateway({"--dev-auth", "--id", "g2b"}, sys.ports[1]);
  // (wait_ready counts the killed gateway as exited: ask the new one directly)
  REQUIRE_MESSAGE(
      wait_until(
          [&] {
            return http_request("127.0.0.1", sys.ports[1], "GET", "/readyz", {}, {}, 1s).status ==
                   200;
          },
          15s, 50ms),
      sys.digest());
  auto status = bench.wait(60s);
  REQUIRE(status.has_value());
  INFO(bench.stdout_text() << bench.stderr_text());
  CHECK(*status == 0);
  auto o = report_of(bench.stdout_text());
  CHECK(num(o, "published") == 6000);
  CHECK(num(o, "reconnects") >= 10);  // the sessions of the killed gateway came back
  CHECK(num(o, "duplicates") == 0);
  CHECK(num(o, "lost") == 0);
  CHECK(num(o, "gaps") == 0);
  CHECK(num(o, "delivered") == num(o, "expected"));
}

TEST_CASE("pushonce-bench: publishes refused (a wrong API key) fail the run, with the reason") {
  bench_system sys;
  auto r =
      run_cli("pushonce-bench",
              {"fanout", "--gateway", sys.gateways(), "--api-key", "not-the-key", "--sessions", "4",
               "--users", "2", "--messages", "20", "--rate", "100", "--json", "--no-progress"},
              {}, 60s);
  INFO(r.describe());
  CHECK(r.code() == 1);
  auto o = report_of(r.run.out);
  CHECK(num(o, "published") == 0);
  CHECK(num(o, "refused") == 20);
  CHECK_FALSE(o.at("ok").as_bool());
  CHECK(r.run.err.find("FAILED: 20 messages refused") != std::string::npos);
  CHECK(r.run.err.find("nothing was published") != std::string::npos);
}

TEST_CASE("pushonce-bench: a stand-in that duplicates frames is caught, exit status 1") {
  auto r = run_cli("pushonce-bench",
                   {"floor", "--duplicate-every", "50", "--sessions", "10", "--users", "5",
                    "--messages", "500", "--rate", "2000", "--json", "--no-progress"},
                   {}, 60s);
  INFO(r.describe());
  CHECK(r.code() == 1);
  auto o = report_of(r.run.out);
  CHECK_FALSE(o.at("ok").as_bool());
  // Every 50th message twice, to both sessions of its user: 10 messages, 20 frames.
  CHECK(num(o, "duplicates") == 20);
  CHECK(num(o, "lost") == 0);
  CHECK(num(o, "delivered") == 1000);

  auto clean = run_cli("pushonce-bench",
                       {"floor", "--sessions", "10", "--users", "5", "--messages", "500", "--rate",
                        "2000", "--json", "--no-progress"},
                       {}, 60s);
  INFO(clean.describe());
  CHECK(clean.code() == 0);
  CHECK(num(report_of(clean.run.out), "duplicates") == 0);
}

}  // namespace test_bench_tool_e2e
