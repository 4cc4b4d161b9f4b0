// What an operator meets on a production host: signals a supervisor or a careless
// `kill -HUP` sends, Redis credentials that are wrong, the programs' own /metrics.

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/lua/publish.hpp"
#include "core/redis/scripts.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_operations_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;
using kind = deployment::kind;

namespace {

// The user's inbox holds `n` entries within a few seconds.
bool ops_inbox_reaches(deployment& d, const std::string& user, long long n) {
  return wait_until([&] { return d.redis().integer({"XLEN", d.inbox_key(user)}) >= n; }, 10s);
}

// One series' value in a /metrics text ("" when absent).
std::string ops_series(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return {};
  at += series.size() + 2;
  return text.substr(at, text.find('\n', at) - at);
}

std::string ops_scrape(std::uint16_t port) {
  auto r = http_request("127.0.0.1", port, "GET", "/metrics", {}, {}, 5s);
  return r.status == 200 ? r.body : std::string();
}

}  // namespace

TEST_CASE("operations: SIGHUP leaves the leader, the worker and the gateway running and serving") {
  deployment d("ops", "hup");
  auto& leader = d.start_leader();
  auto& worker = d.start_worker();
  auto& gateway = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  leader.kill(SIGHUP);
  worker.kill(SIGHUP);
  gateway.kill(SIGHUP);
  // A process that SIGHUP ends is gone well within this.
  CHECK_FALSE(leader.wait(1500ms).has_value());
  CHECK_FALSE(worker.wait(10ms).has_value());
  CHECK_FALSE(gateway.wait(10ms).has_value());
  REQUIRE_MESSAGE(leader.running(), d.logs());
  REQUIRE_MESSAGE(worker.running(), d.logs());
  REQUIRE_MESSAGE(gateway.running(), d.logs());
  CHECK(wait_until([&] { return leader.stderr_text().find("SIGHUP") != std::string::npos; }, 5s));
  CHECK(wait_until([&] { return worker.stderr_text().find("SIGHUP") != std::string::npos; }, 5s));

  // Still serving: an assignment (leader) delivered (worker), the gateway healthy.
  REQUIRE(d.admin({"resource", "add", "room-1"}).code() == 0);
  REQUIRE(d.admin({"join", "alice"}).code() == 0);
  CHECK_MESSAGE(ops_inbox_reaches(d, "alice", 1), d.digest());
  d.publish("alice", R"({"n":1})");
  CHECK_MESSAGE(ops_inbox_reaches(d, "alice", 2), d.digest());
  CHECK(http_request("127.0.0.1", d.port_of(gateway), "GET", "/healthz", {}, {}, 2s).status == 200);
  CHECK(d.wait_ready());
}

TEST_CASE(
    "operations: a wrong Redis password or database is reported with Redis's text and address") {
  redis_server server;
  sync_redis admin(server.port());
  REQUIRE(admin.text({"CONFIG", "SET", "requirepass", "right-secret"}) == "OK");
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  const std::string base = "redis://:wrong-secret@" + address;

  // The CLI: exit 1 and one error line naming what Redis said and where, at once (a
  // refused login is not retried until the command timeout).
  auto r = run_cli("pushonce-leader", {"status", "--redis", base});
  INFO(r.describe());
  CHECK(r.code() == 1);
  CHECK(r.run.err.find("WRONGPASS") != std::string::npos);
  CHECK(r.run.err.find(address) != std::string::npos);
  CHECK(r.run.err.find("command timeout") == std::string::npos);
  CHECK(r.run.err.find("wrong-secret") == std::string::npos);        // never the password
  CHECK(std::count(r.run.err.begin(), r.run.err.end(), '\n') == 1);  // one error line

  auto db =
      run_cli("pushonce-leader", {"status", "--redis", "redis://:right-secret@" + address + "/99"});
  INFO(db.describe());
  CHECK(db.code() == 1);
  CHECK(db.run.err.find("DB index is out of range") != std::string::npos);
  CHECK(db.run.err.find(address) != std::string::npos);

  // A daemon keeps trying (the password may be fixed in Redis) and logs Redis's words.
  process worker(program_path("pushonce-worker"), {"--redis", base, "--id", "w-auth"});
  CHECK_MESSAGE(wait_until(
                    [&] {
                      auto e = worker.stderr_text();
                      return e.find("WRONGPASS") != std::string::npos &&
                             e.find(address) != std::string::npos;
                    },
                    10s),
                worker.stderr_text());
  CHECK(worker.running());
  worker.kill(SIGKILL);
}

TEST_CASE("operations: a bad Redis URL names the part that is wrong") {
  auto r = run_cli("pushonce-leader", {"status", "--redis", "redis://127.0.0.1:notaport"});
  INFO(r.describe());
  CHECK(r.code() == 2);
  CHECK(r.run.err.find("port") != std::string::npos);
  CHECK(r.run.err.find("notaport") != std::string::npos);
}

TEST_CASE("operations: status of an unknown queue is not_found, as join is") {
  deployment d("ops", "noqueue");
  d.start_leader();
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto join = d.admin({"join", "alice", "--queue", "nosuch", "--json"});
  auto status = d.admin({"status", "--queue", "nosuch", "--json"});
  INFO(join.describe() << status.describe());
  CHECK(join.code() == 1);
  CHECK(join.error() == "not_found");
  CHECK(status.code() == join.code());
  CHECK(status.error() == "not_found");
  CHECK(d.admin({"status", "--queue", "default", "--json"}).code() == 0);
  CHECK(d.admin({"status", "--json"}).code() == 0);
}

TEST_CASE("operations: a leader whose --queue list lacks a registered queue refuses to run") {
  deployment d("ops", "queues");
  auto& full = d.start_leader({"--queue", "a", "--queue", "b"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  REQUIRE(wait_until([&] { return d.redis().integer({"SCARD", d.key("queues")}) == 2; }, 5s));
  auto& partial = d.start_leader({"--queue", "a"});
  auto code = partial.wait(10s);
  REQUIRE_MESSAGE(code.has_value(), partial.stderr_text());
  CHECK(*code == 2);
  CHECK(partial.stderr_text().find("queue list conflict") != std::string::npos);
  CHECK(partial.stderr_text().find(" b ") != std::string::npos);
  CHECK(full.running());
  // The same list, in another order, is accepted.
  auto& same = d.start_leader({"--queue", "b", "--queue", "a"});
  CHECK_FALSE(same.wait(2s).has_value());
}

TEST_CASE(
    "operations: the leader's and the worker's /metrics; system counters at 0 from start, "
    "then 1") {
  deployment d("ops", "metrics");
  const auto leader_port = free_port();
  const auto worker_port = free_port();
  auto& leader = d.start_leader({"--metrics-listen", "127.0.0.1:" + std::to_string(leader_port)});
  auto& worker = d.start_worker({"--metrics-listen", "127.0.0.1:" + std::to_string(worker_port),
                                 "--lease-ms", "1000", "--sweep-interval-ms", "200"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  const std::string ns = "{namespace=\"" + d.ns() + "\"}";
  std::string text;
  REQUIRE_MESSAGE(wait_until(
                      [&] {
                        text = ops_scrape(leader_port);
                        return ops_series(text, "pushonce_workers_alive" + ns) == "1";
                      },
                      10s),
                  text << d.logs());
  // Present from the start, at 0: increase() sees the first one.
  CHECK(ops_series(text, "pushonce_dead_lettered_total" + ns) == "0");
  CHECK(ops_series(text, "pushonce_retention_exceeded_total" + ns) == "0");
  CHECK(ops_series(text, "pushonce_redelivered_total" + ns) == "0");
  CHECK(ops_series(text, "pushonce_dead_letters_trimmed_total" + ns) == "0");
  CHECK(ops_series(text, "pushonce_dead_letters" + ns) == "0");
  const std::string own = "{leader=\"" + d.id_of(leader) + "\"}";
  CHECK(ops_series(text, "pushonce_leader_active" + own) == "1");
  CHECK(ops_series(text, "pushonce_leader_fencing_token" + own) != "0");
  CHECK(text.find("# TYPE pushonce_dead_lettered_total counter") != std::string::npos);
  CHECK(text.find("pushonce_sweeper_lag_seconds{namespace=\"" + d.ns() + "\",outbox=\"bus:0\"}") !=
        std::string::npos);
  CHECK(text.find("outbox=\"q:default\"}") != std::string::npos);
  auto wtext = ops_scrape(worker_port);
  const std::string wl = "{worker=\"" + d.id_of(worker) + "\"}";
  CHECK(ops_series(wtext, "pushonce_worker_dead_lettered_total" + wl) == "0");
  CHECK(ops_series(wtext, "pushonce_worker_delivered_total" + wl) == "0");
  CHECK(http_request("127.0.0.1", leader_port, "GET", "/nope", {}, {}, 5s).status == 404);
  CHECK(http_request("127.0.0.1", worker_port, "GET", "/healthz", {}, {}, 5s).status == 200);

  // A dead letter (a malformed outbox entry), as the PushonceDeadLetters alert needs.
  const std::string bad = R"({"user":"alice","id":"1","kind":"message","data":1,"ts":1.5})";
  d.redis().cmd({"XADD", d.k().bus(0, "outbox"), "1-1", "m", bad});
  CHECK_MESSAGE(wait_until(
                    [&] {
                      text = ops_scrape(leader_port);
                      return ops_series(text, "pushonce_dead_lettered_total" + ns) == "1";
                    },
                    10s),
                text);
  CHECK(ops_series(text, "pushonce_dead_letters" + ns) == "1");
  CHECK(wait_until(
      [&] {
        return ops_series(ops_scrape(worker_port), "pushonce_worker_dead_lettered_total" + wl) ==
               "1";
      },
      5s));

  // A standby leader exports its own figures only: the system's are exported once.
  const auto standby_port = free_port();
  d.start_leader({"--metrics-listen", "127.0.0.1:" + std::to_string(standby_port)});
  std::string stext;
  REQUIRE(wait_until(
      [&] {
        stext = ops_scrape(standby_port);
        return !stext.empty();
      },
      10s));
  CHECK(stext.find("pushonce_leader_active{") != std::string::npos);
  CHECK(stext.find("pushonce_dead_lettered_total") == std::string::npos);

  // The gateway's copy is present from the start too (kept for compatibility).
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE(d.wait_ready());
  auto gtext = http_request("127.0.0.1", d.port_of(gw), "GET", "/metrics", {}, {}, 5s).body;
  CHECK(ops_series(gtext, "pushonce_retention_exceeded_total") == "0");
}

TEST_CASE("operations: retention_exceeded on the leader's /metrics: 0 from the start, then > 0") {
  deployment d("ops", "retention", {{"PUSHONCE_OUTBOX_RETENTION_MS", "1000"}});
  const auto port = free_port();
  d.start_leader({"--metrics-listen", "127.0.0.1:" + std::to_string(port)});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  const std::string series = "pushonce_retention_exceeded_total{namespace=\"" + d.ns() + "\"}";
  std::string text;
  REQUIRE(wait_until(
      [&] {
        text = ops_scrape(port);
        return !ops_series(text, series).empty();
      },
      10s));
  CHECK(ops_series(text, series) == "0");
  // No worker runs while entries outlive the outbox retention (as in the recovery test of
  // the same name): the next publish trims them unchecked, the first sweep counts them.
  auto load = d.redis().cmd({"SCRIPT", "LOAD", pushonce::redis::get_script("publish").text});
  REQUIRE(load->type == REDIS_REPLY_STRING);
  // (Entries kept 100 ms here: the script takes the retention from its caller.)
  pushonce::lua::publish_settings settings{0, 120s, 100ms};
  int published = 0;
  auto publish_one = [&] {
    std::vector<pushonce::lua::publish_item> one{
        {"tim", "{\"n\":" + std::to_string(published++) + "}", {}}};
    auto r = d.redis().cmd(
        pushonce::lua::script_command(pushonce::lua::publish_for(d.k(), settings, one)));
    REQUIRE(r->type == REDIS_REPLY_ARRAY);
  };
  while (published < 200) publish_one();
  const auto outbox = d.k().bus(0, "outbox");
  wait_for(
      "a publish trimming the entries past the retention",
      [&] {
        publish_one();
        return d.redis().integer({"XLEN", outbox}) < published;
      },
      10s, 50ms);
  d.start_worker({"--lease-ms", "1000"});
  CHECK_MESSAGE(wait_until(
                    [&] {
                      text = ops_scrape(port);
                      auto v = ops_series(text, series);
                      return !v.empty() && v != "0";
                    },
                    15s),
                text);
}

TEST_CASE("operations: a key rotation: the gateway takes the new API key and the previous one") {
  deployment d("ops", "rotate",
               {{"PUSHONCE_API_KEY", "new-key-0123456789"},
                {"PUSHONCE_API_KEY_PREVIOUS", "old-key-0123456789"}});
  d.start_leader();
  d.start_worker();
  auto& gw = d.start_gateway({"--dev-auth"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto publish_with = [&](const std::string& key, int n) {
    return http_request("127.0.0.1", d.port_of(gw), "POST", "/api/publish",
                        R"({"user":"rot","data":{"n":)" + std::to_string(n) + "}}",
                        {{"Authorization", "Bearer " + key}, {"Content-Type", "application/json"}},
                        5s)
        .status;
  };
  CHECK(publish_with("new-key-0123456789", 1) == 200);
  CHECK(publish_with("old-key-0123456789", 2) == 200);
  CHECK(publish_with("another-key-01234", 3) == 401);
  CHECK(ops_inbox_reaches(d, "rot", 2));
  // A previous JWT secret is held to the current one's rule (32 bytes at least).
  auto short_previous = run_cli("pushonce-gateway", {"--listen", "127.0.0.1:0", "--dev-auth"},
                                {{"PUSHONCE_JWT_SECRET_PREVIOUS", "short"}}, 10s);
  CHECK(short_previous.code() == 2);
  CHECK(short_previous.run.err.find("PUSHONCE_JWT_SECRET_PREVIOUS") != std::string::npos);
}

TEST_CASE("operations: the CLI reads an environment file and its secrets/redis_url") {
  deployment d("ops", "envfile");
  d.start_leader();
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  temp_dir dir;
  const std::string conf = dir.path() + "/pushonce.env";
  {
    std::ofstream env(conf);
    env << "# as installed\nPUSHONCE_NAMESPACE=" << d.ns() << "\nPUSHONCE_LOG_FORMAT=json\n";
    std::filesystem::create_directories(dir.path() + "/secrets");
    std::ofstream url(dir.path() + "/secrets/redis_url");
    url << d.url() << "\n";
  }
  // No Redis and no namespace in the environment: both come from the file.
  environment bare{{"PUSHONCE_REDIS", std::nullopt}, {"PUSHONCE_NAMESPACE", std::nullopt}};
  auto r = run_cli("pushonce-leader", {"join", "envuser", "--env-file", conf, "--json"}, bare);
  INFO(r.describe());
  CHECK(r.code() == 0);
  CHECK(d.redis().integer({"ZCARD", d.k().queue("default", "waiting")}) == 1);
  auto missing = run_cli("pushonce-leader", {"status", "--env-file", dir.path() + "/nope"}, bare);
  CHECK(missing.code() == 2);
  CHECK(missing.run.err.find("nope") != std::string::npos);
}

}  // namespace test_operations_e2e
