// core/metrics_text and core/metrics_listener's socket-free parts: series present from
// start (0, not absent), the tiny responder's routes, --metrics-listen addresses; the
// worker's own counters.

#include <doctest/doctest.h>

#include "core/config.hpp"
#include "core/metrics_listener.hpp"
#include "core/metrics_text.hpp"
#include "worker/worker_counters.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_metrics_text_unit {

using namespace pushonce;

TEST_CASE("metrics: every system counter is present at 0 before Redis has it") {
  auto text = system_counters_text({}, "namespace=\"ns\"");
  for (const char* line : {"pushonce_dead_lettered_total{namespace=\"ns\"} 0\n",
                           "pushonce_retention_exceeded_total{namespace=\"ns\"} 0\n",
                           "pushonce_redelivered_total{namespace=\"ns\"} 0\n",
                           "pushonce_dead_letters_trimmed_total{namespace=\"ns\"} 0\n",
                           "pushonce_published_total{namespace=\"ns\"} 0\n",
                           "pushonce_delivered_total{namespace=\"ns\"} 0\n",
                           "# TYPE pushonce_dead_lettered_total counter\n"}) {
    CAPTURE(line);
    CHECK(text.find(line) != std::string::npos);
  }
  auto later = system_counters_text({{"dead_lettered", "1"}, {"new_thing", "7"}, {"x y", "1"}}, "");
  CHECK(later.find("pushonce_dead_lettered_total 1\n") != std::string::npos);
  CHECK(later.find("pushonce_retention_exceeded_total 0\n") != std::string::npos);
  CHECK(later.find("pushonce_new_thing_total 7\n") != std::string::npos);  // unknown: as is
  CHECK(later.find("x y") == std::string::npos);                           // not a metric name
  CHECK(system_counters_text({{"delivered", "junk"}}, "").find("pushonce_delivered_total 0\n") !=
        std::string::npos);
}

TEST_CASE("metrics: label values are escaped") {
  CHECK(metric_label_value(R"(a"b\c)") == R"(a\"b\\c)");
  CHECK(metric_label_value("a\nb") == "a\\nb");
  CHECK(metric_text("x", "gauge", "h", "", 1) == "# HELP x h\n# TYPE x gauge\nx 1\n");
}

TEST_CASE("metrics listener: routes") {
  CHECK(metrics_route("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").metrics);
  CHECK(metrics_route("GET /metrics?x=1 HTTP/1.1\r\n\r\n").metrics);
  CHECK(metrics_route("GET /healthz HTTP/1.1\r\n\r\n").status == 200);
  CHECK_FALSE(metrics_route("GET /healthz HTTP/1.1\r\n\r\n").metrics);
  CHECK(metrics_route("GET / HTTP/1.1\r\n\r\n").status == 404);
  CHECK(metrics_route("POST /metrics HTTP/1.1\r\n\r\n").status == 405);
  CHECK(metrics_route("garbage").status == 400);
}

TEST_CASE("metrics listener: --metrics-listen addresses") {
  auto a = parse_listen_address("127.0.0.1:9101", "--metrics-listen");
  CHECK(a.host == "127.0.0.1");
  CHECK(a.port == 9101);
  CHECK(parse_listen_address(":9101", "--metrics-listen").host == "0.0.0.0");
  CHECK(parse_listen_address("[::1]:9101", "--metrics-listen").host == "::1");
  CHECK_THROWS_AS(parse_listen_address("9101", "--metrics-listen"), usage_error);
  CHECK_THROWS_AS(parse_listen_address("127.0.0.1:x", "--metrics-listen"), usage_error);
  CHECK_THROWS_AS(parse_listen_address("localhost:1", "--metrics-listen"), usage_error);
  try {
    parse_listen_address("127.0.0.1:99999", "--metrics-listen");
  } catch (const usage_error& e) {
    CHECK(std::string(e.what()).find("port '99999'") != std::string::npos);
  }
}

TEST_CASE("metrics: a worker's own counters, present from start") {
  worker::worker_counters c;
  auto zero = worker::worker_metrics_text("w1", c);
  CHECK(zero.find("pushonce_worker_delivered_total{worker=\"w1\"} 0\n") != std::string::npos);
  CHECK(zero.find("pushonce_worker_dead_lettered_total{worker=\"w1\"} 0\n") != std::string::npos);
  c.delivered = 12;
  CHECK(worker::worker_metrics_text("w1", c).find(
            "pushonce_worker_delivered_total{worker=\"w1\"} 12\n") != std::string::npos);
}

}  // namespace test_metrics_text_unit
