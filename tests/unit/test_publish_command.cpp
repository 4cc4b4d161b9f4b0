// lua::publish_for: the KEYS/ARGV layout of publish.lua, on a single Redis (PUBLISH on
// NS:bus) and on a Redis Cluster (SPUBLISH on the shard's own NS:{bus:N}:ch).
#include "core/lua/publish.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "core/redis/hash_slot.hpp"
#include "core/redis/scripts.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_publish_command_unit {

using namespace pushonce;

TEST_CASE("publish_for: classic on one Redis, sharded channel per bus shard on a cluster") {
  keys k("ns", 16);  // shard 3 of 16 keeps the tag bus:3
  std::vector<lua::publish_item> batch{{"alice", "1", std::string("k1")}, {"bob", "2", {}}};
  lua::publish_settings s;
  s.shard = 3;
  s.dedup_window = std::chrono::milliseconds(60000);
  s.outbox_retention = std::chrono::milliseconds(30000);
  const std::vector<std::string> classic{"EVALSHA",
                                         redis::get_script("publish").sha1,
                                         "3",
                                         "ns:{bus:3}:seq",
                                         "ns:{bus:3}:outbox",
                                         "ns:{bus:3}:idem:alice:k1",
                                         "3",
                                         "60000",
                                         "30000",
                                         "ns:bus",
                                         "p",
                                         "0",
                                         "0",
                                         "0",
                                         "alice",
                                         "1",
                                         "1",
                                         "bob",
                                         "2",
                                         "0"};
  CHECK(lua::script_command(lua::publish_for(k, s, batch)) == classic);

  s.sharded = true;
  auto sharded = lua::script_command(lua::publish_for(k, s, batch));
  CHECK(sharded[9] == "ns:{bus:3}:ch");
  CHECK(sharded[10] == "s");
  // SPUBLISH inside the script must stay in the script's slot.
  CHECK(redis::hash_slot(sharded[9]) == redis::hash_slot(sharded[3]));
  CHECK(k.bus_channel(3) == "ns:{bus:3}:ch");
  CHECK(k.bus_channel() == "ns:bus");
}

TEST_CASE(
    "publish_for: on one Redis the stats key and the rate bucket come before the "
    "idempotency keys") {
  keys k("ns");
  std::vector<lua::publish_item> batch{{"alice", "1", std::string("k1")}};
  lua::publish_settings s;
  s.count_in_stats = true;
  s.rate = lua::publish_rate{"ns:ratelimit:api:00ff", 100, 200};
  auto cmd = lua::script_command(lua::publish_for(k, s, batch));
  REQUIRE(cmd.size() == 3 + 5 + 8 + 3);
  CHECK(cmd[2] == "5");
  CHECK(cmd[5] == "ns:stats");
  CHECK(cmd[6] == "ns:ratelimit:api:00ff");
  CHECK(cmd[7] == "ns:{bus:0}:idem:alice:k1");
  CHECK(cmd[13] == "100");
  CHECK(cmd[14] == "200");
  CHECK(cmd[15] == "1");
  CHECK(cmd[16] == "alice");

  s.rate.reset();
  auto stats_only = lua::script_command(lua::publish_for(k, s, batch));
  CHECK(stats_only[2] == "4");
  CHECK(stats_only[6] == "ns:{bus:0}:idem:alice:k1");
  CHECK(stats_only[12] == "0");
  CHECK(stats_only[14] == "1");
}

TEST_CASE("publish_refused_for: the wait of a rate_limited error, nothing for other replies") {
  auto limited = redis::reply::make_error("rate_limited 250");
  CHECK(lua::publish_refused_for(limited) == std::chrono::milliseconds(250));
  redis::reply garbled = limited;
  garbled.str = "rate_limited soon";
  CHECK(lua::publish_refused_for(garbled) == std::chrono::milliseconds(1000));
  redis::reply other = limited;
  other.str = "bad_request message 1: bad user";
  CHECK_FALSE(lua::publish_refused_for(other));
  redis::reply array;
  array.kind = redis::reply::type::array;
  CHECK_FALSE(lua::publish_refused_for(array));
}

}  // namespace test_publish_command_unit
