// The scripts on a Redis Cluster: a claim.lua batch of several users is refused whole
// (CROSSSLOT) and runs once split per slot (lua::claim_groups, what the worker does in
// cluster mode); leader_lease.lua runs with the cluster's fencing key.
#include "core/lua/claim.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/redis/hash_slot.hpp"
#include "core/redis/scripts.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/integration/lua_calls.hpp"
#include "tests/support/sync_redis.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_cluster_scripts_integration {

using pushonce::bus_message;
using pushonce::test::bus_msg;
using pushonce::test::cluster_fixture;
namespace redis = pushonce::redis;
namespace lua = pushonce::lua;

TEST_CASE("cluster: claim.lua batches split per slot; leader_lease.lua in one slot" *
          doctest::test_suite("cluster")) {
  cluster_fixture fx;
  // Users whose keys land on different masters.
  std::vector<std::string> users;
  for (auto port : fx.cluster.masters()) {
    for (int i = 0;; ++i) {
      std::string u = "user" + std::to_string(port) + "-" + std::to_string(i);
      if (fx.cluster.master_of(redis::hash_slot(fx.k.user(u, ""))) == port) {
        users.push_back(u);
        break;
      }
    }
  }
  REQUIRE(users.size() == 3);
  std::vector<bus_message> batch;
  for (std::size_t i = 0; i < users.size(); ++i) {
    batch.push_back(bus_msg(std::to_string(10 + i), users[i]));
    batch.push_back(bus_msg(std::to_string(20 + i), users[i]));
  }
  lua::claim_settings s;
  s.owner = "w1:1";
  s.epoch = "e1";
  const auto& script = redis::get_script("claim");

  fx.run([&]() -> boost::asio::awaitable<void> {
#ifdef NDEBUG  // a debug build asserts before sending a command whose keys span slots
    // The whole batch in one call: keys of three slots, refused by the cluster.
    std::vector<redis::command> whole;
    whole.push_back(lua::script_command(lua::claim_for(fx.k, s, batch)));
    CO_LET(auto refused, redis::eval_all(*fx.conn, script, std::move(whole)));
    REQUIRE(refused.size() == 1);
    CHECK(refused[0].value.is_error());
    CHECK(refused[0].value.error_code() == "CROSSSLOT");
#endif

    // Split per slot: every message delivered, offsets 1 and 2 per user.
    auto groups = lua::claim_groups(fx.k, batch);
    REQUIRE(groups.size() == 3);
    std::vector<redis::command> parts;
    for (const auto& g : groups) {
      std::vector<bus_message> part;
      for (auto i : g) part.push_back(batch[i]);
      parts.push_back(lua::script_command(lua::claim_for(fx.k, s, part)));
    }
    CO_LET(auto rs, redis::eval_all(*fx.conn, script, std::move(parts)));
    REQUIRE(rs.size() == 3);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      REQUIRE(rs[g].ok());
      auto parsed = lua::parse_claim_reply(rs[g].value, groups[g].size());
      REQUIRE(parsed);
      for (std::size_t j = 0; j < parsed->size(); ++j) {
        CHECK((*parsed)[j].state == lua::claim_state::delivered);
        CHECK((*parsed)[j].number == static_cast<long long>(j + 1));
      }
    }

    // leader_lease.lua: NS:leader and the cluster's fencing key share a slot; the single
    // Redis name would be refused.
    std::vector<std::string> args{"acquire", "l1", "1", "h", "5000", fx.k.plain("leader:released")};
#ifdef NDEBUG
    std::vector<std::string> old_keys{fx.k.plain("leader"), fx.k.plain("leader:fencing")};
    CO_LET(auto old, pushonce::test::run_script(*fx.conn, "leader_lease", old_keys, args));
    CHECK(old.value.is_error());
#endif
    std::vector<std::string> keys{fx.k.plain("leader"), fx.k.leader_fencing(true)};
    CO_LET(auto lease, pushonce::test::run_script(*fx.conn, "leader_lease", keys, args));
    CHECK(lease.ok());
    CHECK(lease.value.as_int() == 1);
  });
  // Each user's inbox is on its own master.
  for (const auto& u : users) {
    pushonce::test::sync_redis r(fx.cluster.master_of(redis::hash_slot(fx.k.user(u, ""))));
    CHECK(r.inbox(fx.k.user(u, "inbox")).size() == 2);
  }
}

}  // namespace test_cluster_scripts_integration
