// Polling clients end to end (docs/protocol.md "Polling clients"): join, ticket (202 with
// Retry-After while waiting, the same answer again before it without Redis, 200 with the admission
// token once assigned), accept, leave, 404 not_queued; a poller is a presence session: polling
// keeps it in line with abandonment on, and once it stops it is abandoned.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <string>

#include "tests/support/admission_keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_polling_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

http_reply poll(std::uint16_t port, const char* method, const std::string& action,
                const std::string& user, const std::string& body = {}) {
  return http_request("127.0.0.1", port, method, "/api/queue/default/" + action + "?user=" + user,
                      body);
}

json::object body_of(const http_reply& r) {
  return json::parse(r.body).as_object();
}

}  // namespace

TEST_CASE("polling: join, wait with Retry-After, the admission with its token, accept, leave") {
  temp_dir dir("pushonce-polling");
  {
    std::ofstream out(dir.file("key.pem"), std::ios::binary);
    out << new_p256_private_pem();
  }
  deployment d("poll", "flow");
  d.start_leader({"--admission-key", dir.file("key.pem")});
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth", "--admission-key", dir.file("key.pem")}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  auto challenge = poll(port, "GET", "challenge", "pia");
  REQUIRE(challenge.status == 200);
  CHECK(body_of(challenge).at("bits").as_int64() == 0);
  auto joined = poll(port, "POST", "join", "pia");
  REQUIRE_MESSAGE(joined.status == 200, joined.body);
  CHECK(str_field(body_of(joined), "type") == "joined");
  auto again = poll(port, "POST", "join", "pia");
  CHECK(again.status == 409);
  // Every refusal has one shape: {"error","message"} with the WebSocket error's fields.
  CHECK(str_field(body_of(again), "error") == "conflict");
  CHECK(str_field(body_of(again), "code") == "conflict");
  CHECK(str_field(body_of(again), "op") == "join");

  auto waiting = poll(port, "GET", "ticket", "pia");
  REQUIRE_MESSAGE(waiting.status == 202, waiting.body);
  CHECK(body_of(waiting).at("position").as_int64() == 1);
  const auto retry = std::stoll(waiting.field("retry-after"));
  CHECK(retry >= 1);
  CHECK(retry <= 20);
  // Sooner than Retry-After: the same answer, even though the line moved meanwhile.
  auto add = d.admin({"resource", "add", "seat-1"});
  REQUIRE_MESSAGE(add.code() == 0, add.describe());
  auto cached = poll(port, "GET", "ticket", "pia");
  CHECK(cached.status == 202);
  CHECK(cached.body == waiting.body);

  // After it: the admission, with the token the leader signed.
  pace(std::chrono::seconds(retry) + 100ms, "a poller keeps to its Retry-After");
  http_reply admitted;
  REQUIRE(wait_until(
      [&] {
        admitted = poll(port, "GET", "ticket", "pia");
        return admitted.status == 200;
      },
      10s, 200ms));
  auto a = body_of(admitted);
  INFO(admitted.body);
  CHECK(str_field(a, "resource") == "seat-1");
  CHECK_FALSE(str_field(a, "id").empty());
  CHECK(str_field(a, "admission").size() > 100);
  CHECK(a.contains("accept_by"));
  CHECK(a.contains("expires_at"));
  auto accepted = poll(port, "POST", "accept", "pia", R"({"id":")" + str_field(a, "id") + "\"}");
  CHECK_MESSAGE(accepted.status == 200, accepted.body);

  // leave, then not_queued.
  REQUIRE(poll(port, "POST", "join", "quin").status == 200);
  auto left = poll(port, "POST", "leave", "quin");
  CHECK(left.status == 200);
  auto gone = poll(port, "GET", "ticket", "quin");
  CHECK(gone.status == 404);
  CHECK(str_field(body_of(gone), "code") == "not_queued");
  CHECK(str_field(body_of(gone), "error") == "not_queued");
  CHECK(poll(port, "GET", "ticket", "").status == 401);
  CHECK(poll(port, "GET", "bogus", "quin").status == 404);

  // Join and leave at the WebSocket's queue-op rate (burst 20 by default): a flood of them
  // is refused 429 with Retry-After before it reaches Redis; another user is not held back.
  int limited = 0;
  std::string retry_after;
  for (int i = 0; i < 40; ++i) {
    auto r = poll(port, "POST", i % 2 ? "leave" : "join", "rhea");
    if (r.status == 429) {
      ++limited;
      retry_after = r.field("retry-after");
      CHECK(str_field(body_of(r), "error") == "rate_limited");
      CHECK(str_field(body_of(r), "code") == "rate_limited");
      CHECK(str_field(body_of(r), "type") == "error");
      CHECK(str_field(body_of(r), "op") == (i % 2 ? "leave" : "join"));
    }
  }
  CHECK(limited >= 10);
  CHECK(retry_after == "1");
  CHECK(poll(port, "POST", "join", "sol").status == 200);
}

TEST_CASE("polling: a poller is present while it polls, and abandoned once it stops") {
  deployment d("poll", "presence");
  d.start_leader();
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto set = d.admin({"settings", "--abandon-after", "2"});
  REQUIRE_MESSAGE(set.code() == 0, set.describe());
  REQUIRE(poll(port, "POST", "join", "remy").status == 200);
  // Polling at its cadence for 6 s: still in line (abandonment is 2 s without a session).
  const auto until = std::chrono::steady_clock::now() + 6s;
  while (std::chrono::steady_clock::now() < until) {
    auto t = poll(port, "GET", "ticket", "remy");
    REQUIRE_MESSAGE(t.status == 202, t.body);
    pace(std::chrono::seconds(std::stoll(t.field("retry-after"))),
         "a poller keeps to its Retry-After");
  }
  INFO(d.digest());
  auto still = d.admin_json({"position", "remy"});
  CHECK(still.at("position").as_int64() == 1);
  // It stops: after 3 x Retry-After its session ends, 2 s later it is abandoned.
  bool abandoned = wait_until(
      [&] {
        return d.admin({"position", "remy"}).code() != 0;
      },
      20s, 250ms);
  CHECK(abandoned);
}

}  // namespace test_polling_e2e
