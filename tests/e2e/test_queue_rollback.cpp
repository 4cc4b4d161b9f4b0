// A queue slot that loses its last writes (its master fails over before replicating them),
// emulated on one Redis: the queue's keys ({q:Q}) are put back as they were before an
// assignment, while the users' keys (claim records, inboxes) keep theirs. The next
// assignment, to another user, must reach that user: its id is a new one, not the lost
// assignment's again (whose claim record answers "delivered" for the first user).
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/names.hpp"
#include "core/redis/scripts.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_queue_rollback_e2e {

using namespace pushonce::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

// The first assignment frame a session receives within `timeout`.
std::optional<json::object> assignment_of(ws_client& ws, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    auto f = ws.receive(100ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    if (str_field(o, "type") == "message" && str_field(o, "kind") == "assignment") return o;
  }
  return std::nullopt;
}

// Every key of the queue's slot with its DUMP.
std::vector<std::pair<std::string, std::string>> dump_slot(sync_redis& r, const std::string& tag) {
  std::vector<std::pair<std::string, std::string>> out;
  auto keys = r.cmd({"KEYS", tag + "*"});
  for (std::size_t i = 0; keys && i < keys->elements; ++i) {
    std::string key(keys->element[i]->str, keys->element[i]->len);
    auto d = r.cmd({"DUMP", key});
    if (d && d->type == REDIS_REPLY_STRING) out.emplace_back(key, std::string(d->str, d->len));
  }
  return out;
}

// The slot as `saved` had it: keys made since are gone, the others restored.
void restore_slot(sync_redis& r, const std::string& tag,
                  const std::vector<std::pair<std::string, std::string>>& saved) {
  auto keys = r.cmd({"KEYS", tag + "*"});
  for (std::size_t i = 0; keys && i < keys->elements; ++i)
    r.cmd({"DEL", std::string(keys->element[i]->str, keys->element[i]->len)});
  for (const auto& [key, value] : saved) r.cmd({"RESTORE", key, "0", value, "REPLACE"});
}

std::unique_ptr<ws_client> session_of(std::uint16_t port, const std::string& user) {
  auto ws = std::make_unique<ws_client>();
  ws->connect("127.0.0.1", port, "/ws");
  REQUIRE(ws->send(hello_frame(user)));
  return ws;
}

}  // namespace

TEST_CASE("queue slot rollback: the next assignment gets a new id and reaches its user") {
  deployment d("rollback", "queue-slot");
  d.start_leader();
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  const std::string tag = d.ns() + ":{q:default}";

  auto ann = session_of(port, "ann");
  auto ben = session_of(port, "ben");
  auto join = d.admin({"join", "ann"});
  REQUIRE_MESSAGE(join.code() == 0, join.describe());
  const auto before = dump_slot(d.redis(), tag);
  REQUIRE_FALSE(before.empty());

  auto add = d.admin({"resource", "add", "seat-1"});
  REQUIRE_MESSAGE(add.code() == 0, add.describe());
  auto first = assignment_of(*ann, 10s);
  INFO(d.digest());
  REQUIRE(first);
  const std::string lost_id = str_field(*first, "id");

  // The queue slot loses the assignment: ann waits again, seat-1 was never added.
  restore_slot(d.redis(), tag, before);
  auto leave = d.admin({"leave", "ann"});
  REQUIRE_MESSAGE(leave.code() == 0, leave.describe());
  auto joined = d.admin({"join", "ben"});
  REQUIRE_MESSAGE(joined.code() == 0, joined.describe());
  auto add2 = d.admin({"resource", "add", "seat-2"});
  REQUIRE_MESSAGE(add2.code() == 0, add2.describe());

  auto second = assignment_of(*ben, 10s);
  REQUIRE_MESSAGE(second, "ben never received his assignment (the lost id was " << lost_id << ")");
  CHECK(str_field(*second, "id") != lost_id);
  CHECK(pushonce::compare_ids(lost_id, str_field(*second, "id")) < 0);
  CHECK(str_field(second->at("data").as_object(), "resource") == "seat-2");
  CHECK_FALSE(assignment_of(*ann, 300ms));
}

TEST_CASE("source index rollback: a queue whose index went to another queue gets a new one") {
  deployment d("rollback", "source-index");
  d.start_leader({"--lease-ms", "1000"});
  d.start_worker();
  auto port = d.port_of(d.start_gateway({"--dev-auth"}));
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto source_of_assignment = [&](const std::string& user, const std::string& seat) {
    auto ws = session_of(port, user);
    auto join = d.admin({"join", user});
    REQUIRE_MESSAGE(join.code() == 0, join.describe());
    auto add = d.admin({"resource", "add", seat});
    REQUIRE_MESSAGE(add.code() == 0, add.describe());
    auto a = assignment_of(*ws, 10s);
    INFO(d.digest());
    REQUIRE_MESSAGE(a, user << " got no assignment");
    return std::stoull(str_field(*a, "id")) % 4096;
  };
  CHECK(source_of_assignment("ann", "seat-1") == 16);

  // NS:sources loses every write (a failover), and another queue's allocation, made then,
  // is given 16: the index queue default's leader still uses.
  d.redis().cmd({"DEL", d.key("sources")});
  const auto script = pushonce::redis::get_script("source");
  d.redis().cmd({"EVAL", script.text, "1", d.key("sources"), "q:other"});
  REQUIRE(d.redis().text({"HGET", d.key("sources"), "q:other"}) == "16");

  // Within a lease, the leader learns it and moves to another index: the two queues' ids
  // never share one from then on.
  let_lapse(1500ms, "the leader checking its source index again");
  CHECK(source_of_assignment("cat", "seat-2") == 17);
  CHECK(d.redis().text({"HGET", d.key("sources"), "q:default"}) == "17");
  CHECK(d.redis().text({"HGET", d.key("sources"), "q:other"}) == "16");
}

}  // namespace test_queue_rollback_e2e
