// Admission tokens end to end: the leader signs each assignment's token (ES256, the key in
// --admission-key), two sessions of one user and a later session get the identical token,
// the gateway publishes the JWKS, the token verifies with it (and with the checkout
// examples in Node and Python), a flipped byte does not, the state API follows the
// assignment, and after a key rotation a token of the old key still verifies while its
// public key is listed in --admission-verify-keys.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/admission_token.hpp"
#include "tests/support/admission_keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_admission_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

const std::string admission_api_key = "admission-e2e-api-key-0123456789abcdef";

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The data of the first assignment frame a session receives within `timeout`.
std::optional<json::object> assignment_of(ws_client& ws, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    auto f = ws.receive(100ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (str_field(o, "type") == "message" && str_field(o, "kind") == "assignment")
      return o.at("data").as_object();
  }
  return std::nullopt;
}

// The epoch of the welcome a session receives first.
std::string welcome_epoch(ws_client& ws) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    auto f = ws.receive(100ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (str_field(o, "type") == "welcome") return str_field(o, "epoch");
  }
  return {};
}

std::unique_ptr<ws_client> session_of(std::uint16_t port, const std::string& user) {
  auto ws = std::make_unique<ws_client>();
  ws->connect("127.0.0.1", port, "/ws");
  REQUIRE(ws->send(hello_frame(user)));
  return ws;
}

std::string admission_state(std::uint16_t port, const std::string& id) {
  auto r = http_request("127.0.0.1", port, "GET", "/api/admission/" + id, {},
                        {{"Authorization", bearer(admission_api_key)}});
  if (r.status != 200) return "http " + std::to_string(r.status);
  return std::string(json::parse(r.body).at("state").as_string());
}

std::string token_of(const json::object& data) {
  if (!data.contains("admission") || !data.at("admission").is_string()) return {};
  return std::string(data.at("admission").as_string());
}

}  // namespace

TEST_CASE("admission: identical tokens per assignment, JWKS, state API, checkout examples") {
  temp_dir dir("pushonce-admission");
  const auto key_pem = new_p256_private_pem();
  write_text(dir.file("key.pem"), key_pem);
  deployment d("adm", "tokens", {{"PUSHONCE_API_KEY", admission_api_key}});
  d.start_leader({"--admission-key", dir.file("key.pem")});
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth", "--admission-key", dir.file("key.pem")}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  // Two sessions of one user, on the same gateway; one join.
  auto s1 = session_of(port, "ada");
  auto s2 = session_of(port, "ada");
  REQUIRE(s1->send(R"({"op":"join"})"));
  auto add = d.admin({"resource", "add", "seat-1"});
  REQUIRE_MESSAGE(add.code() == 0, add.describe());
  auto a1 = assignment_of(*s1, 10s);
  auto a2 = assignment_of(*s2, 10s);
  INFO(d.digest());
  REQUIRE(a1);
  REQUIRE(a2);
  const auto token = token_of(*a1);
  REQUIRE_FALSE(token.empty());
  CHECK(token_of(*a2) == token);
  // A session opened later is sent the same frame again from the inbox: the same token.
  auto s3 = session_of(port, "ada");
  const auto epoch = welcome_epoch(*s3);
  REQUIRE_FALSE(epoch.empty());
  auto a3 = assignment_of(*s3, 10s);
  REQUIRE(a3);
  CHECK(token_of(*a3) == token);
  // A resume from before the assignment (since = epoch:0) replays it: the same token.
  auto s4 = std::make_unique<ws_client>();
  s4->connect("127.0.0.1", port, "/ws");
  REQUIRE(s4->send(hello_frame("ada", epoch, 0)));
  auto a4 = assignment_of(*s4, 10s);
  REQUIRE(a4);
  CHECK(token_of(*a4) == token);

  // The JWKS: the key's public half, kid = its thumbprint; the token verifies with it.
  auto jwks = http_request("127.0.0.1", port, "GET", "/.well-known/jwks.json");
  REQUIRE(jwks.status == 200);
  CHECK(jwks.field("content-type") == "application/json");
  auto keys = json::parse(jwks.body).at("keys").as_array();
  REQUIRE(keys.size() == 1);
  CHECK(keys[0].at("kid").as_string() == pushonce::admission::jwk_thumbprint(keys[0].as_object()));
  auto set_key = pushonce::admission::public_key_of_pem(p256_public_pem(key_pem));
  CHECK(set_key.kid == std::string(keys[0].at("kid").as_string()));
  pushonce::admission::verifier v({set_key}, "");
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  auto ok = v.verify(token, now_s);
  REQUIRE(ok.ok);
  CHECK(ok.ok->sub == "ada");
  CHECK(ok.ok->queue == "default");
  CHECK(ok.ok->resource == "seat-1");
  CHECK(ok.ok->iss == "pushonce");
  CHECK(ok.ok->exp - ok.ok->iat == 600);
  const auto id = ok.ok->jti;

  // The CLI: valid with the state; a flipped byte is invalid (exit 1).
  auto cli =
      d.admin({"admission", "verify", token, "--admission-key", dir.file("key.pem"), "--json"});
  REQUIRE_MESSAGE(cli.code() == 0, cli.describe());
  CHECK(cli.out.at("valid").as_bool());
  CHECK(str_field(cli.out.as_object(), "user") == "ada");
  CHECK(str_field(cli.out.as_object(), "id") == id);
  CHECK(str_field(cli.out.as_object(), "state") == "assigned");
  auto flipped = token;
  auto at = token.find('.') + 3;
  flipped[at] = flipped[at] == 'A' ? 'B' : 'A';
  CHECK_FALSE(v.verify(flipped, now_s).ok);
  auto bad =
      d.admin({"admission", "verify", flipped, "--admission-key", dir.file("key.pem"), "--json"});
  CHECK(bad.code() == 1);
  CHECK(bad.error() == "invalid");

  // The state API follows the assignment.
  CHECK(admission_state(port, id) == "assigned");
  auto acc = d.admin({"accept", "ada"});
  REQUIRE_MESSAGE(acc.code() == 0, acc.describe());
  CHECK(admission_state(port, id) == "accepted");

  // The checkout examples (docs/operations.md), offline and with the state call.
  const std::string examples = std::string(PUSHONCE_SOURCE_DIR) + "/examples/checkout/";
  environment env{{"PUSHONCE_URL", "http://127.0.0.1:" + std::to_string(port)}};
  environment with_key = env;
  with_key.push_back({"PUSHONCE_API_KEY", admission_api_key});
  auto node = run_cli("/usr/bin/env", {"node", examples + "verify.mjs", token}, env);
  INFO("node: " << node.describe() << " (run deploy/setup.sh: npm ci in examples/checkout)");
  CHECK(node.code() == 0);
  CHECK(str_field(node.out.as_object(), "id") == id);
  auto py = run_cli("/usr/bin/python3", {examples + "verify.py", token}, env);
  INFO("python: " << py.describe() << " (Debian packages python3-jwt python3-cryptography)");
  CHECK(py.code() == 0);
  CHECK(str_field(py.out.as_object(), "user") == "ada");
  auto node_state = run_cli("/usr/bin/env", {"node", examples + "verify.mjs", token}, with_key);
  CHECK(str_field(node_state.out.as_object(), "state") == "accepted");
  CHECK(node_state.code() == 0);
  auto node_bad = run_cli("/usr/bin/env", {"node", examples + "verify.mjs", flipped}, env);
  CHECK(node_bad.code() == 1);
  auto py_bad = run_cli("/usr/bin/python3", {examples + "verify.py", flipped}, env);
  CHECK(py_bad.code() == 1);

  auto rel = d.admin({"resource", "release", "seat-1"});
  REQUIRE_MESSAGE(rel.code() == 0, rel.describe());
  CHECK(admission_state(port, id) == "released");
  auto py_state = run_cli("/usr/bin/python3", {examples + "verify.py", token}, with_key);
  CHECK(str_field(py_state.out.as_object(), "state") == "released");
  CHECK(py_state.code() == 1);  // released: the checkout refuses

  CHECK(admission_state(port, "4095") == "http 404");
  auto no_key = http_request("127.0.0.1", port, "GET", "/api/admission/" + id);
  CHECK(no_key.status == 401);

  // A record that names another user (an id made twice, as a rolled-back queue slot could
  // once do) is not this token's admission: the CLI and both examples refuse it.
  d.redis().cmd({"HSET", d.k().queue("default", "admissions"), id, "assigned mallory seat-1"});
  auto other =
      d.admin({"admission", "verify", token, "--admission-key", dir.file("key.pem"), "--json"});
  CHECK(other.code() == 1);
  CHECK(other.error() == "invalid");
  auto node_other = run_cli("/usr/bin/env", {"node", examples + "verify.mjs", token}, with_key);
  CHECK(node_other.code() == 1);
  CHECK(str_field(node_other.out.as_object(), "state") == "mismatch");
  auto py_other = run_cli("/usr/bin/python3", {examples + "verify.py", token}, with_key);
  CHECK(py_other.code() == 1);
  CHECK(str_field(py_other.out.as_object(), "state") == "mismatch");
}

TEST_CASE("admission: key rotation: the old key's tokens verify while it is listed") {
  temp_dir dir("pushonce-admission-rotation");
  const auto old_pem = new_p256_private_pem();
  const auto new_pem = new_p256_private_pem();
  write_text(dir.file("old.pem"), old_pem);
  write_text(dir.file("old.pub"), p256_public_pem(old_pem));
  write_text(dir.file("new.pem"), new_pem);
  deployment d("adm", "rotation", {{"PUSHONCE_API_KEY", admission_api_key}});
  auto& old_leader = d.start_leader({"--admission-key", dir.file("old.pem")});
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth", "--admission-key", dir.file("new.pem"),
                                         "--admission-verify-keys", dir.file("old.pub")}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  auto s1 = session_of(port, "ada");
  REQUIRE(s1->send(R"({"op":"join"})"));
  REQUIRE(d.admin({"resource", "add", "seat-1"}).code() == 0);
  auto a1 = assignment_of(*s1, 10s);
  INFO(d.digest());
  REQUIRE(a1);
  const auto old_token = token_of(*a1);
  REQUIRE_FALSE(old_token.empty());

  // The key is rotated: the leader restarts with the new key.
  old_leader.kill(SIGTERM);
  REQUIRE(old_leader.wait(10s));
  d.start_leader({"--admission-key", dir.file("new.pem")});
  auto s2 = session_of(port, "bob");
  REQUIRE(s2->send(R"({"op":"join"})"));
  REQUIRE(d.admin({"resource", "add", "seat-2"}).code() == 0);
  auto a2 = assignment_of(*s2, 15s);
  REQUIRE(a2);
  const auto new_token = token_of(*a2);
  REQUIRE_FALSE(new_token.empty());

  // The JWKS lists both; both tokens verify against it, with different kids.
  auto jwks = http_request("127.0.0.1", port, "GET", "/.well-known/jwks.json");
  REQUIRE(jwks.status == 200);
  std::vector<pushonce::admission::public_key> keys;
  const auto jwks_doc = json::parse(jwks.body);
  for (const auto& k : jwks_doc.at("keys").as_array()) {
    CHECK(k.at("kid").as_string() == pushonce::admission::jwk_thumbprint(k.as_object()));
    keys.push_back({std::string(k.at("kid").as_string()), {}, k.as_object()});
  }
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].kid == pushonce::admission::public_key_of_pem(new_pem).kid);
  CHECK(keys[1].kid == pushonce::admission::public_key_of_pem(old_pem).kid);

  auto v_old = d.admin({"admission", "verify", old_token, "--admission-key", dir.file("new.pem"),
                        "--admission-verify-keys", dir.file("old.pub"), "--json"});
  CHECK_MESSAGE(v_old.code() == 0, v_old.describe());
  auto v_new = d.admin({"admission", "verify", new_token, "--admission-key", dir.file("new.pem"),
                        "--admission-verify-keys", dir.file("old.pub"), "--json"});
  CHECK_MESSAGE(v_new.code() == 0, v_new.describe());
  // Once the old key is no longer listed, its tokens are refused.
  auto v_gone =
      d.admin({"admission", "verify", old_token, "--admission-key", dir.file("new.pem"), "--json"});
  CHECK(v_gone.code() == 1);
  CHECK(v_gone.error() == "invalid");

  // The Node example checks both against the gateway's JWKS.
  const std::string examples = std::string(PUSHONCE_SOURCE_DIR) + "/examples/checkout/";
  environment env{{"PUSHONCE_URL", "http://127.0.0.1:" + std::to_string(port)}};
  CHECK(run_cli("/usr/bin/env", {"node", examples + "verify.mjs", old_token}, env).code() == 0);
  CHECK(run_cli("/usr/bin/env", {"node", examples + "verify.mjs", new_token}, env).code() == 0);
}

TEST_CASE("admission: many assignments in steps: each token names its frame, user, resource") {
  temp_dir dir("pushonce-admission-many");
  const auto key_pem = new_p256_private_pem();
  write_text(dir.file("key.pem"), key_pem);
  deployment d("adm", "many");
  d.start_leader({"--admission-key", dir.file("key.pem"), "--assign-batch", "7"});
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  constexpr int users = 60;
  std::vector<std::unique_ptr<ws_client>> ws;
  for (int i = 0; i < users; ++i) {
    ws.push_back(session_of(port, "u" + std::to_string(i)));
    REQUIRE(ws.back()->send(R"({"op":"join"})"));
  }
  // Resources arrive in steps while the sessions still join: plans go stale and are made
  // again; every assignment still carries the token of its own id.
  for (int step = 0; step < 8; ++step) {
    std::vector<std::string> args{"resource", "add"};
    for (int i = 0; i < 5; ++i) args.push_back("r" + std::to_string(step * 5 + i));
    auto r = d.admin(args);
    REQUIRE_MESSAGE(r.code() == 0, r.describe());
  }
  pushonce::admission::verifier v({pushonce::admission::public_key_of_pem(key_pem)}, "");
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  std::set<std::string> resources, ids;
  int assigned = 0;
  const auto until = std::chrono::steady_clock::now() + 20s;
  std::vector<bool> done(users, false);
  while (assigned < 40 && std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < users; ++i) {
      while (auto f = ws[static_cast<std::size_t>(i)]->receive(1ms)) {
        auto o = json::parse(*f).as_object();
        if (str_field(o, "type") != "message" || str_field(o, "kind") != "assignment") continue;
        CHECK_FALSE(done[static_cast<std::size_t>(i)]);  // one assignment per user
        done[static_cast<std::size_t>(i)] = true;
        ++assigned;
        const auto& data = o.at("data").as_object();
        auto c = v.verify(token_of(data), now_s);
        REQUIRE(c.ok);
        CHECK(c.ok->sub == "u" + std::to_string(i));
        CHECK(c.ok->jti == str_field(o, "id"));
        CHECK(c.ok->resource == str_field(data, "resource"));
        CHECK(resources.insert(c.ok->resource).second);
        CHECK(ids.insert(c.ok->jti).second);
      }
    }
  }
  INFO(d.digest());
  CHECK(assigned == 40);
}

}  // namespace test_admission_e2e
