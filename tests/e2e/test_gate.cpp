// The gate end to end (docs/operations.md "Protecting a checkout"): GET /api/gate?queue=Q answers
// 204 with the admission's headers for a live admission's token (cookie or bearer), renews its
// lease, and refuses (401 without or with a bad token, 403 for another queue, within 1 s of a
// release); POST /api/gate/cookie sets the cookie for a same-origin page only.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>

#include "tests/support/admission_keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gate_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

std::optional<json::object> assignment_within(ws_client& ws, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    auto f = ws.receive(50ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (str_field(o, "type") == "message" && str_field(o, "kind") == "assignment") return o;
  }
  return std::nullopt;
}

http_reply gate(std::uint16_t port, const std::string& queue, const headers& h) {
  return http_request("127.0.0.1", port, "GET", "/api/gate?queue=" + queue, {}, h);
}

long long lease_of(deployment& d, const std::string& user) {
  auto listed = d.admin_json({"admission", "list", "--user", user});
  const auto& rows = listed.at("admissions").as_array();
  if (rows.empty() || !rows[0].at("expires_at").is_int64()) return -1;
  return rows[0].at("expires_at").as_int64();
}

// A leader that signs admissions (ES256), a worker and a gateway that verifies them, a queue
// with 30 s leases and one resource, and `user` admitted to it over a WebSocket session.
struct admitted_user {
  temp_dir dir{"pushonce-gate"};
  deployment d;
  std::uint16_t port = 0;
  ws_client ws;
  std::string id, token;

  admitted_user(const std::string& what, const std::string& user) : d("gate", what) {
    {
      std::ofstream out(dir.file("key.pem"), std::ios::binary);
      out << new_p256_private_pem();
    }
    d.start_leader({"--admission-key", dir.file("key.pem")});
    d.start_worker();
    port = d.port_of(d.start_gateway({"--dev-auth", "--admission-key", dir.file("key.pem")}));
    REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
    auto set = d.admin({"settings", "--session", "30"});
    REQUIRE_MESSAGE(set.code() == 0, set.describe());
    auto add = d.admin({"resource", "add", "seat-1"});
    REQUIRE_MESSAGE(add.code() == 0, add.describe());
    ws.connect("127.0.0.1", port, "/ws");
    REQUIRE(ws.send(hello_frame(user)));
    REQUIRE(ws.send(R"({"op":"join"})"));
    auto assignment = assignment_within(ws, 10s);
    INFO(d.digest());
    REQUIRE(assignment);
    id = str_field(*assignment, "id");
    token = str_field(assignment->at("data").as_object(), "admission");
    REQUIRE_FALSE(token.empty());
  }
};

}  // namespace

TEST_CASE("gate: a live admission passes with its headers and is renewed; the rest is refused") {
  admitted_user a("check", "gwen");
  auto& d = a.d;
  const auto port = a.port;
  const auto id = a.id;
  const auto token = a.token;

  // The cookie a page sets: same origin only; HttpOnly, SameSite=Lax, not Secure in dev.
  const std::string host = "127.0.0.1:" + std::to_string(port);
  const std::string body = R"({"token":")" + token + R"("})";
  auto foreign = http_request("127.0.0.1", port, "POST", "/api/gate/cookie", body,
                              {{"Origin", "https://evil.example"}, {"Host", host}});
  CHECK(foreign.status == 403);
  auto set_cookie = http_request("127.0.0.1", port, "POST", "/api/gate/cookie", body,
                                 {{"Origin", "http://" + host}, {"Host", host}});
  REQUIRE(set_cookie.status == 204);
  const auto cookie = set_cookie.field("set-cookie");
  CHECK(cookie.rfind("pushonce_admission=" + token + ";", 0) == 0);
  CHECK(cookie.find("HttpOnly") != std::string::npos);
  CHECK(cookie.find("SameSite=Lax") != std::string::npos);
  CHECK(cookie.find("Secure") == std::string::npos);
  auto bad_body =
      http_request("127.0.0.1", port, "POST", "/api/gate/cookie", R"({"token":"x.y.z"})",
                   {{"Origin", "http://" + host}, {"Host", host}});
  CHECK(bad_body.status == 401);

  // The check: cookie or bearer.
  const long long lease_before = lease_of(d, "gwen");
  REQUIRE(lease_before > 0);
  auto ok = gate(port, "default", {{"Cookie", "theme=dark; pushonce_admission=" + token}});
  REQUIRE(ok.status == 204);
  CHECK(ok.field("x-pushonce-user") == "gwen");
  CHECK(ok.field("x-pushonce-resource") == "seat-1");
  CHECK(ok.field("x-pushonce-admission") == id);
  CHECK(ok.field("cache-control") == "no-store");
  auto again = gate(port, "default", {{"Authorization", bearer(token)}});
  CHECK(again.status == 204);
  // The renewals go out in one batch a second: the lease now ends 30 s after a check.
  CHECK(wait_until([&] { return lease_of(d, "gwen") > lease_before; }, 5s, 50ms));

  // Refusals, each JSON and no-store.
  auto none = gate(port, "default", {});
  CHECK(none.status == 401);
  CHECK(none.field("cache-control") == "no-store");
  CHECK(str_field(json::parse(none.body).as_object(), "error") == "unauthorized");
  auto tampered = token;
  tampered[tampered.size() - 3] = tampered[tampered.size() - 3] == 'A' ? 'B' : 'A';
  CHECK(gate(port, "default", {{"Authorization", bearer(tampered)}}).status == 401);
  auto other = gate(port, "vip", {{"Authorization", bearer(token)}});
  CHECK(other.status == 403);
  CHECK(gate(port, "bad%2Fname", {{"Authorization", bearer(token)}}).status == 400);

  // Tokens that do not verify: 20 from one address, then refused without a verification:
  // 401 "rate_limited" with Retry-After (a 429 would reach a fail-open nginx's upstream).
  int limited = 0;
  for (int i = 0; i < 25; ++i) {
    auto r = gate(port, "default", {{"Authorization", bearer(tampered)}});
    CHECK(r.status == 401);
    limited += str_field(json::parse(r.body).as_object(), "error") == "rate_limited";
  }
  CHECK(limited >= 4);
  CHECK(gate(port, "default", {{"Authorization", bearer(tampered)}}).field("retry-after") != "");

  // A release is refused within a second.
  auto rel = d.admin({"admission", "release", id});
  REQUIRE_MESSAGE(rel.code() == 0, rel.describe());
  const auto released_at = std::chrono::steady_clock::now();
  int status = 204;
  wait_until(
      [&] {
        status = gate(port, "default", {{"Authorization", bearer(token)}}).status;
        return status != 204;
      },
      3s, 50ms, 50ms);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - released_at);
  MESSAGE("the gate refused the released admission after " << took.count() << " ms");
  CHECK(status == 403);
  CHECK(took < 1500ms);
}

// One batch of renewals a second per gateway, each with its check's time: a check that no
// other check follows is renewed all the same, within about a second (a timer flushes the
// batch; no check has to come along to carry it out).
TEST_CASE("gate: the last check's renewal goes out although no check follows it") {
  admitted_user a("lastcheck", "lars");
  auto& d = a.d;
  const auto port = a.port;
  const auto token = a.token;
  const long long assigned_lease = lease_of(d, "lars");
  REQUIRE(assigned_lease > 0);

  REQUIRE(gate(port, "default", {{"Authorization", bearer(token)}}).status == 204);
  long long first = 0;
  REQUIRE(wait_until(
      [&] {
        first = lease_of(d, "lars");
        return first > assigned_lease;
      },
      5s, 50ms));
  // A second check 600 ms after the first, and then none.
  pace(600ms, "a second check within the same second as the first batch");
  REQUIRE(gate(port, "default", {{"Authorization", bearer(token)}}).status == 204);
  long long last = 0;
  const bool renewed = wait_until(
      [&] {
        last = lease_of(d, "lars");
        return last >= first + 400;
      },
      5s, 50ms);
  INFO("lease after the first check ", first, ", after the second ", last);
  CHECK(renewed);
}

}  // namespace test_gate_e2e
