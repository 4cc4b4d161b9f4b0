// The real programs over rediss://: a Redis whose TLS port wants a client certificate, a
// leader and a worker given the CA and the client certificate through the environment, a
// message published with the CLI delivered once; a CLI with the wrong CA is refused with
// the verification error, a CLI naming a missing CA file is a usage error.
#include <doctest/doctest.h>

#include <string>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/tls_certs.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_redis_tls_system_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {
// `env` with one variable set to another value.
environment with(environment env, const std::string& name, const std::string& value) {
  for (auto& [k, v] : env)
    if (k == name) v = value;
  return env;
}
}  // namespace

TEST_CASE("redis tls system: leader, worker and CLI over rediss:// with a client certificate") {
  tls_certs certs;
  auto tls_port = free_port();
  redis_server redis(redis_server_options{.extra_args = certs.redis_args(tls_port, true)});
  const std::string ns = unique_namespace("e2e", "tls");
  pushonce::keys k(ns);
  environment env = {{"PUSHONCE_REDIS", "rediss://localhost:" + std::to_string(tls_port)},
                     {"PUSHONCE_REDIS_CLUSTER", std::nullopt},
                     {"PUSHONCE_REDIS_TLS_CA", certs.ca},
                     {"PUSHONCE_REDIS_TLS_CERT", certs.client_cert},
                     {"PUSHONCE_REDIS_TLS_KEY", certs.client_key},
                     {"PUSHONCE_NAMESPACE", ns},
                     {"PUSHONCE_LOG_LEVEL", "info"}};
  process leader(program_path("pushonce-leader"), {"run", "--id", "l1"}, env);
  process worker(program_path("pushonce-worker"), {"--id", "w1"}, env);

  auto pub = run_cli("pushonce-leader", {"publish", "alice", R"({"n":1})", "--id", "m1", "--json"},
                     env, 30s);
  REQUIRE_MESSAGE(pub.code() == 0, pub.describe());
  sync_redis plain(redis.port());  // the plain port, to look
  bool delivered = wait_until(
      [&] {
        return plain.integer({"XLEN", k.user("alice", "inbox")}) == 1;
      },
      30s, 100ms);
  CHECK_MESSAGE(delivered, worker.stderr_text());
  // status over rediss:// too (the worker reports its counters every few seconds).
  cli_result status;
  bool counted = wait_until(
      [&] {
        status = run_cli("pushonce-leader", {"status", "--json"}, env);
        return status.out.is_object() && counter(status.out.as_object(), "delivered") == 1;
      },
      20s, 500ms);
  CHECK_MESSAGE(counted, status.describe());
  // Every client of the TLS port: the leader, the worker (connections and subscribers).
  CHECK(plain.text({"CLIENT", "LIST"}).find("pushonce-worker") != std::string::npos);

  // The wrong CA: the CLI gets no answer (redis_unavailable, exit 1); a daemon logs why.
  auto wrong = with(env, "PUSHONCE_REDIS_TLS_CA", certs.other_ca);
  auto refused = run_cli("pushonce-leader", {"status", "--json"}, wrong, 30s);
  CHECK_MESSAGE(refused.code() == 1, refused.describe());
  CHECK(refused.error() == "redis_unavailable");
  process doubting(program_path("pushonce-worker"), {"--id", "w2"}, wrong);
  bool logged = wait_until(
      [&] { return doubting.stderr_text().find("certificate verify failed") != std::string::npos; },
      10s, 100ms);
  CHECK_MESSAGE(logged, doubting.stderr_text());

  // A missing CA file, or TLS files with a plain URL: usage errors.
  auto missing =
      run_cli("pushonce-leader", {"status", "--redis-tls-ca", certs.ca + ".missing"}, env);
  CHECK_MESSAGE(missing.code() == 2, missing.describe());
  CHECK(missing.error_line());
  auto plain_url = with(env, "PUSHONCE_REDIS", redis.url());
  auto mixed = run_cli("pushonce-leader", {"status"}, plain_url);
  CHECK_MESSAGE(mixed.code() == 2, mixed.describe());
}

}  // namespace test_redis_tls_system_e2e
