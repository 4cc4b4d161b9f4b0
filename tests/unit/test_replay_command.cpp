#include "core/lua/replay.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "core/dead_letter_entry.hpp"
#include "core/redis/scripts.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_replay_command_unit {

using namespace pushonce;

namespace {
lua::replay_request request() {
  lua::replay_request r;
  r.id = "4096";
  r.user = "alice";
  r.outbox = "ns:{bus:0}:outbox";
  r.message = "{...}";
  r.entries = {"1-0", "2-0"};
  r.dedup_window = std::chrono::milliseconds(120000);
  return r;
}
}  // namespace

TEST_CASE("replay.lua: the KEYS/ARGV layout of its header, a single Redis and a cluster") {
  keys k("ns");
  const auto& sha = redis::get_script("replay").sha1;
  auto r = request();
  CHECK(lua::script_command(lua::replay_for(k, false, r)) ==
        redis::command{"EVALSHA", sha, "3", "ns:{bus:0}:c:0:0", "ns:dead-letters",
                       "ns:{bus:0}:outbox", "4096", "120000", "ns:bus", "{...}", "1-0", "2-0"});
  CHECK(lua::script_command(lua::replay_for(k, true, r)) ==
        redis::command{"EVALSHA", sha, "1", "ns:{bus:0}:c:0:0", "4096", "120000", "ns:bus", "{...}",
                       "1-0", "2-0"});
  // No entry found: the record and the stream only (the script answers not_dead/not_found).
  r.entries.clear();
  CHECK(lua::script_command(lua::replay_for(k, false, r)) ==
        redis::command{"EVALSHA", sha, "2", "ns:{bus:0}:c:0:0", "ns:dead-letters", "4096", "120000",
                       "ns:bus", "{...}"});
  auto f = lua::replay_followups(k, request());
  REQUIRE(f.size() == 3);
  CHECK(f[0] == redis::command{"XADD", "ns:{bus:0}:outbox", "*", "m", "{...}"});
  CHECK(f[1] == redis::command{"PUBLISH", "ns:bus", "{...}"});
  CHECK(f[2] == redis::command{"XDEL", "ns:dead-letters", "1-0", "2-0"});
}

TEST_CASE("dead_letter_add.lua: its layout; the reply is the count of trimmed entries") {
  keys k("ns");
  CHECK(lua::script_command(dead_letter_entry(k, "", "", "", "malformed", 0, "x")) ==
        redis::command{"EVALSHA", redis::get_script("dead_letter_add").sha1, "1", "ns:dead-letters",
                       "10000", "", "", "", "malformed", "0", "x"});
  redis::reply n;
  n.kind = redis::reply::type::integer;
  n.integer = 3;
  CHECK(parse_dead_letter_entry_reply(n) == 3);
  redis::reply s;
  s.kind = redis::reply::type::string;
  s.str = "3";
  CHECK_FALSE(parse_dead_letter_entry_reply(s));
}

}  // namespace test_replay_command_unit
