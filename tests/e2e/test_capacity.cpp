// Capacity end to end (docs/capacity.md) with the real programs: a join to an empty queue
// with a rate is admitted at once with a pass, the next user waits for the next due
// instant, a lease ends by itself (`expired`, reason "lease") and leaves `admission list`;
// with --max-active a second user waits until the first admission is released over
// POST /api/admission/ID/release (`expired`, reason "released"), a renewal of it answers
// 409, and `admission renew|release|list` and `status` show the same.
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
namespace test_capacity_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

namespace {

const std::string capacity_api_key = "capacity-e2e-api-key-0123456789abcdef";

std::unique_ptr<ws_client> session_of(std::uint16_t port, const std::string& user) {
  auto ws = std::make_unique<ws_client>();
  ws->connect("127.0.0.1", port, "/ws");
  REQUIRE(ws->send(hello_frame(user)));
  return ws;
}

// The first frame within `timeout` that `want` accepts (frames before it are dropped).
template <class Want>
std::optional<json::object> next_frame(ws_client& ws, std::chrono::milliseconds timeout,
                                       Want want) {
  const auto until = clock_type::now() + timeout;
  while (clock_type::now() < until) {
    auto f = ws.receive(50ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (want(o)) return o;
  }
  return std::nullopt;
}

auto message_of_kind(const char* kind) {
  return [kind](const json::object& o) {
    return str_field(o, "type") == "message" && str_field(o, "kind") == kind;
  };
}

auto of_type(const char* type) {
  return [type](const json::object& o) { return str_field(o, "type") == type; };
}

json::object data_of(const json::object& frame) {
  return frame.at("data").as_object();
}

std::string api_post(std::uint16_t port, const std::string& path, int& status) {
  auto r = http_request("127.0.0.1", port, "POST", path, {},
                        {{"Authorization", bearer(capacity_api_key)}});
  status = r.status;
  return r.body;
}

}  // namespace

TEST_CASE("capacity: a join with capacity free is admitted at once; the rate paces the next") {
  deployment d("cap", "rate", {{"PUSHONCE_API_KEY", capacity_api_key}});
  d.start_leader();
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto set = d.admin({"settings", "--rate", "1", "--session", "2", "--json"});
  REQUIRE_MESSAGE(set.code() == 0, set.describe());
  CHECK(set.out.at("rate_per_min").as_int64() == 1);
  CHECK(set.out.at("session_s").as_int64() == 2);
  CHECK(set.out.at("passes").as_bool());

  auto ann = session_of(port, "ann");
  REQUIRE(next_frame(*ann, 10s, of_type("welcome")));
  REQUIRE(ann->send(R"({"op":"join"})"));
  auto joined = next_frame(*ann, 10s, of_type("joined"));
  REQUIRE(joined);
  const auto joined_at = clock_type::now();
  auto assignment = next_frame(*ann, 5s, message_of_kind("assignment"));
  INFO(d.digest());
  REQUIRE(assignment);
  const auto after =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - joined_at);
  MESSAGE("instant admission: the assignment followed `joined` after " << after.count() << " ms");
  auto data = data_of(*assignment);
  CHECK(str_field(data, "kind") == "pass");
  CHECK(str_field(data, "resource").rfind("pass:", 0) == 0);
  REQUIRE(data.at("expires_at").is_int64());
  const std::string ann_id = str_field(*assignment, "id");
  auto listed = d.admin_json({"admission", "list"});
  REQUIRE(listed.at("admissions").as_array().size() == 1);
  CHECK(str_field(listed.at("admissions").as_array()[0].as_object(), "id") == ann_id);

  // The next instant is a minute away: bob waits.
  auto bob = session_of(port, "bob");
  REQUIRE(bob->send(R"({"op":"join"})"));
  REQUIRE(next_frame(*bob, 10s, of_type("joined")));
  CHECK_FALSE(next_frame(*bob, 1500ms, message_of_kind("assignment")));

  // ann's lease (2 s, not renewed) ends by itself.
  auto expired = next_frame(*ann, 10s, message_of_kind("expired"));
  REQUIRE(expired);
  CHECK(str_field(data_of(*expired), "reason") == "lease");
  CHECK(str_field(data_of(*expired), "id") == ann_id);
  auto after_lease = d.admin_json({"admission", "list"});
  CHECK(after_lease.at("admissions").as_array().empty());
  int status = 0;
  api_post(port, "/api/admission/" + ann_id + "/renew", status);
  CHECK(status == 409);

  // The day-after report counts the same.
  auto report = d.admin_json({"report", "--since", "1h"});
  CHECK(report.at("joins").as_int64() == 2);
  CHECK(report.at("admitted").as_int64() == 1);
  CHECK(report.at("leases_expired").as_int64() == 1);
  CHECK(report.at("admissions_per_min").at("rate_per_min").as_int64() == 1);
  CHECK(report.at("lease_s").at("p50").as_int64() == 3);  // the 2 s lease: bucket 1-3 s
  auto text = d.admin({"report"});
  CHECK(text.run.out.find("admitted 1") != std::string::npos);
  auto bad = d.admin({"report", "--since", "yesterday"});
  CHECK(bad.code() == 2);
}

TEST_CASE("capacity: max-active holds the next user until a release; renew and list agree") {
  deployment d("cap", "cap", {{"PUSHONCE_API_KEY", capacity_api_key}});
  d.start_leader();
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto set = d.admin({"settings", "--max-active", "1", "--json"});
  REQUIRE_MESSAGE(set.code() == 0, set.describe());
  auto add = d.admin({"resource", "add", "r1", "r2"});
  REQUIRE_MESSAGE(add.code() == 0, add.describe());

  auto carl = session_of(port, "carl");
  auto dana = session_of(port, "dana");
  REQUIRE(carl->send(R"({"op":"join"})"));
  auto carl_assignment = next_frame(*carl, 10s, message_of_kind("assignment"));
  INFO(d.digest());
  REQUIRE(carl_assignment);
  REQUIRE(dana->send(R"({"op":"join"})"));
  REQUIRE(next_frame(*dana, 10s, of_type("joined")));
  CHECK_FALSE(next_frame(*dana, 1500ms, message_of_kind("assignment")));
  auto st = d.admin_json({"settings"});
  CHECK(st.at("active").as_int64() == 1);
  CHECK(st.at("max_active").as_int64() == 1);
  // status and /metrics show the live count beside the cap.
  auto status_json = d.admin_json({"status"});
  auto q = status_json.at("queues").as_object().at("default").as_object();
  CHECK(q.at("active").as_int64() == 1);
  CHECK(q.at("max_active").as_int64() == 1);
  auto metrics = http_request("127.0.0.1", port, "GET", "/metrics", {}, {});
  CHECK(metrics.body.find("pushonce_queue_active{queue=\"default\"} 1\n") != std::string::npos);
  CHECK(metrics.body.find("pushonce_queue_max_active{queue=\"default\"} 1\n") != std::string::npos);
  CHECK(metrics.body.find("pushonce_queue_rate_per_min{queue=\"default\"} 0\n") !=
        std::string::npos);

  const std::string carl_id = str_field(*carl_assignment, "id");
  int status = 0;
  auto body = api_post(port, "/api/admission/" + carl_id + "/release", status);
  REQUIRE_MESSAGE(status == 200, body);
  auto released = json::parse(body).as_object();
  CHECK(str_field(released, "state") == "released");
  CHECK(released.at("expires_at").is_null());
  auto told = next_frame(*carl, 10s, message_of_kind("expired"));
  REQUIRE(told);
  CHECK(str_field(data_of(*told), "reason") == "released");
  // Releasing again is answered the same; a renewal is refused.
  api_post(port, "/api/admission/" + carl_id + "/release", status);
  CHECK(status == 200);
  body = api_post(port, "/api/admission/" + carl_id + "/renew", status);
  CHECK(status == 409);
  CHECK(str_field(json::parse(body).as_object(), "error") == "released");

  // The place under the cap went to dana.
  auto dana_assignment = next_frame(*dana, 10s, message_of_kind("assignment"));
  REQUIRE(dana_assignment);
  const std::string dana_id = str_field(*dana_assignment, "id");
  auto renewed = d.admin_json({"admission", "renew", dana_id});
  CHECK(str_field(renewed, "state") == "assigned");
  CHECK(str_field(renewed, "user") == "dana");
  auto gone = d.admin_json({"admission", "release", dana_id});
  CHECK(str_field(gone, "state") == "released");
  auto none = d.admin_json({"admission", "list"});
  CHECK(none.at("admissions").as_array().empty());
  auto unknown = d.admin({"admission", "renew", "12345", "--json"});
  CHECK(unknown.code() == 1);
}

TEST_CASE("capacity: a token past its exp verifies while its admission's lease is live") {
  temp_dir dir("pushonce-capacity");
  {
    std::ofstream out(dir.file("key.pem"), std::ios::binary);
    out << new_p256_private_pem();
  }
  deployment d("cap", "ttl", {{"PUSHONCE_API_KEY", capacity_api_key}});
  d.start_leader({"--admission-key", dir.file("key.pem"), "--admission-ttl", "1"});
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth", "--admission-key", dir.file("key.pem")}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto set = d.admin({"settings", "--session", "60", "--max-active", "5", "--json"});
  REQUIRE_MESSAGE(set.code() == 0, set.describe());
  auto add = d.admin({"resource", "add", "seat-1"});
  REQUIRE_MESSAGE(add.code() == 0, add.describe());
  auto eve = session_of(port, "eve");
  REQUIRE(eve->send(R"({"op":"join"})"));
  auto assignment = next_frame(*eve, 10s, message_of_kind("assignment"));
  INFO(d.digest());
  REQUIRE(assignment);
  const auto token = str_field(data_of(*assignment), "admission");
  REQUIRE_FALSE(token.empty());
  // Verified until past the token's 1 s exp (whole seconds).
  cli_result live;
  CHECK(wait_until(
      [&] {
        live = d.admin(
            {"admission", "verify", token, "--admission-key", dir.file("key.pem"), "--json"});
        REQUIRE_MESSAGE(live.code() == 0, live.describe());
        return live.out.at("exp_passed").as_bool();
      },
      5s, 100ms));
  CHECK(live.out.at("valid").as_bool());
  CHECK(live.out.at("expires_at").is_int64());
  CHECK(str_field(live.out.as_object(), "state") == "assigned");
  auto rel = d.admin({"resource", "release", "seat-1"});
  REQUIRE_MESSAGE(rel.code() == 0, rel.describe());
  auto ended =
      d.admin({"admission", "verify", token, "--admission-key", dir.file("key.pem"), "--json"});
  CHECK(ended.code() == 1);
  CHECK(ended.error() == "expired");
}

}  // namespace test_capacity_e2e
