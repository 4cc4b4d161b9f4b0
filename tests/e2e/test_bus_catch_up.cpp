// A worker whose bus subscriber lost its connection sweeps the outbox as soon as it is
// subscribed again, for what was published meanwhile, instead of leaving it to the regular
// sweep a lease later (docs/operations.md, "Recovery sweeper"). Here the lease is 60 s, so
// only that catch-up can deliver within the test's deadline.

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "core/keys.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/sync_redis.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bus_catch_up_e2e {

using namespace std::chrono_literals;
using pushonce::test::wait_until;

namespace {

// The id of the connection named `name` that holds a subscription ("" when none).
std::string subscriber_id(pushonce::test::sync_redis& r, const std::string& name) {
  auto list = r.text({"CLIENT", "LIST"});
  for (std::size_t pos = 0; pos < list.size();) {
    auto eol = list.find('\n', pos);
    auto line = list.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? list.size() : eol + 1;
    auto sub = line.find(" sub=");
    if (line.find(" name=" + name + " ") == std::string::npos || sub == std::string::npos ||
        std::atoi(line.c_str() + sub + 5) < 1 || line.rfind("id=", 0) != 0)
      continue;
    return line.substr(3, line.find(' ') - 3);
  }
  return {};
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("recovery: a worker whose bus subscriber reconnects catches up on the outbox at once") {
  pushonce::test::deployment d("e2e", "catch-up", {{"PUSHONCE_DEDUP_WINDOW_MS", "600000"}});
  auto& worker = d.start_worker({"--id", "wc", "--lease-ms", "60000"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  // A first message the normal path delivers (the outbox exists from then on).
  d.publish("alice", "{\"n\":1}");
  const auto inbox = d.k().user("alice", "inbox");
  REQUIRE_MESSAGE(wait_until([&] { return d.redis().inbox(inbox).size() == 1; }, 10s), d.logs());

  const auto id = subscriber_id(d.redis(), "pushonce-worker:wc");
  REQUIRE(!id.empty());
  // In the outbox only, never published on the bus (as if published while the subscriber
  // was away), then the subscriber's connection is cut: it reconnects at once.
  const std::string line =
      R"({"id":"8192","user":"alice","src":"bus:0","kind":"message","data":2,"ts":)" +
      std::to_string(now_ms()) + "}";
  CHECK(!d.redis().text({"XADD", d.k().bus(0, "outbox"), "*", "m", line}).empty());
  CHECK(d.redis().integer({"CLIENT", "KILL", "ID", id}) == 1);

  // Delivered by the catch-up: the regular sweep would wait for the lease, 60 s.
  CHECK_MESSAGE(wait_until([&] { return d.redis().inbox(inbox).size() == 2; }, 20s), d.logs());
  auto entries = d.redis().inbox(inbox);
  REQUIRE(entries.size() == 2);
  CHECK(entries[1].second.find("\"id\":\"8192\"") != std::string::npos);
  CHECK(worker.running());
}

}  // namespace test_bus_catch_up_e2e

namespace test_bus_catch_up_e2e {

TEST_CASE("recovery: a worker whose bus SUBSCRIBE Redis refused catches up once it is accepted") {
  pushonce::test::deployment d("e2e", "catch-up-acl", {{"PUSHONCE_DEDUP_WINDOW_MS", "600000"}});
  // The worker alone logs in as an ACL user whose right to subscribe the test toggles.
  d.redis().cmd({"ACL", "SETUSER", "e2e-worker", "on", ">e2e-worker-pass", "~*", "&*", "+@all"});
  auto url = d.url();
  REQUIRE(url.rfind("redis://", 0) == 0);
  url.insert(8, "e2e-worker:e2e-worker-pass@");
  auto& worker = d.start_worker({"--id", "wa", "--lease-ms", "60000", "--redis", url});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  d.publish("alice", "{\"n\":1}");
  const auto inbox = d.k().user("alice", "inbox");
  REQUIRE_MESSAGE(wait_until([&] { return d.redis().inbox(inbox).size() == 1; }, 10s), d.logs());

  // The worker's Pub/Sub link is cut while it may not subscribe: it logs the refusal ...
  const auto id = subscriber_id(d.redis(), "pushonce-worker:wa");
  REQUIRE(!id.empty());
  d.redis().cmd({"ACL", "SETUSER", "e2e-worker", "-subscribe"});
  CHECK(d.redis().integer({"CLIENT", "KILL", "ID", id}) == 1);
  REQUIRE_MESSAGE(
      wait_until([&] { return d.logs().find("refused to subscribe") != std::string::npos; }, 10s),
      d.logs());
  // ... a message is published on the bus it does not hear ...
  d.publish("alice", "{\"n\":2}");
  d.redis().cmd({"ACL", "SETUSER", "e2e-worker", "+subscribe"});
  // ... and once subscribed again it catches up on the outbox at once (the regular sweep
  // would wait for the lease, 60 s).
  CHECK_MESSAGE(wait_until([&] { return d.redis().inbox(inbox).size() == 2; }, 20s), d.logs());
  CHECK(worker.running());
}

}  // namespace test_bus_catch_up_e2e
