// claim.lua batches split per cluster slot (core/lua/claim: claim_groups).
#include "core/lua/claim.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <vector>

#include "core/redis/hash_slot.hpp"

using pushonce::bus_message;
using pushonce::keys;
using pushonce::lua::claim_groups;

namespace {
bus_message msg(std::string id, std::string user) {
  bus_message m;
  m.id = std::move(id);
  m.user = std::move(user);
  return m;
}
}  // namespace

TEST_CASE("claim_groups: one group per slot, in first-seen order, indices in batch order") {
  keys k("ns");
  // alice and bob are in different slots (checked, so the test means what it says).
  REQUIRE(pushonce::redis::hash_slot(k.claim("alice", "1")) !=
          pushonce::redis::hash_slot(k.claim("bob", "1")));
  std::vector<bus_message> batch = {msg("1", "alice"), msg("2", "bob"), msg("3", "alice"),
                                    msg("4", "carol"), msg("5", "bob")};
  auto groups = claim_groups(k, batch);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0] == std::vector<std::size_t>{0, 2});
  CHECK(groups[1] == std::vector<std::size_t>{1, 4});
  CHECK(groups[2] == std::vector<std::size_t>{3});

  CHECK(claim_groups(k, {}).empty());
  std::vector<bus_message> one_user = {msg("1", "dave"), msg("2", "dave")};
  CHECK(claim_groups(k, one_user).size() == 1);
}
