// lua::publish_command: the KEYS/ARGV layout of publish.lua, on a single Redis (PUBLISH on
// NS:bus) and on a Redis Cluster (SPUBLISH on the shard's own NS:{bus:N}:ch).
#include "core/lua/publish.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "core/redis/hash_slot.hpp"
#include "core/redis/scripts.hpp"

using namespace pushonce;

TEST_CASE("publish_command: classic on one Redis, sharded channel per bus shard on a cluster") {
  keys k("ns");
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
                                         "alice",
                                         "1",
                                         "1",
                                         "bob",
                                         "2",
                                         "0"};
  CHECK(lua::publish_command(k, s, batch) == classic);

  s.sharded = true;
  auto sharded = lua::publish_command(k, s, batch);
  CHECK(sharded[9] == "ns:{bus:3}:ch");
  CHECK(sharded[10] == "s");
  // SPUBLISH inside the script must stay in the script's slot.
  CHECK(redis::hash_slot(sharded[9]) == redis::hash_slot(sharded[3]));
  CHECK(k.bus_channel(3) == "ns:{bus:3}:ch");
  CHECK(k.bus_channel() == "ns:bus");
}
