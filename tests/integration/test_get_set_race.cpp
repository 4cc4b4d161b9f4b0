// Why the claim is one script (docs/data-model.md, claim.lua): a client-side GET-then-SET claim
// lets two workers both win under an ordinary interleaving; claim.lua under the same interleaving
// has exactly one winner. The steps are driven explicitly, in order, on two connections, so the
// interleaving is deterministic.
#include "core/redis/scripts.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <string>
#include <vector>

#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_get_set_race_integration {

namespace asio = boost::asio;
using pushonce::test::async_latch;
using pushonce::test::cmd;
using pushonce::test::redis_fixture;

TEST_CASE("naive GET-then-SET claim: both workers believe they won") {
  redis_fixture fx;
  auto c1 = fx.connect();
  auto c2 = fx.connect();
  const std::string key = fx.k.claim("alice", "4096");
  bool w1_won = false, w2_won = false;
  std::string final_owner;
  fx.run([&]() -> asio::awaitable<void> {
    // Step 1: worker 1 reads: no claim.
    auto get1 = cmd({"GET", key});
    CO_LET(auto g1, c1->exec(std::move(get1)));
    REQUIRE(g1.ok());
    // Step 2: worker 2 reads before worker 1 has written: no claim either.
    auto get2 = cmd({"GET", key});
    CO_LET(auto g2, c2->exec(std::move(get2)));
    REQUIRE(g2.ok());
    // Step 3 and 4: each writes its claim, believing the message is its own.
    if (g1.value.is_nil()) {
      auto set1 = cmd({"SET", key, "w1"});
      CO_LET(auto s1, c1->exec(std::move(set1)));
      w1_won = s1.ok();
    }
    if (g2.value.is_nil()) {
      auto set2 = cmd({"SET", key, "w2"});
      CO_LET(auto s2, c2->exec(std::move(set2)));
      w2_won = s2.ok();
    }
    auto get = cmd({"GET", key});
    CO_LET(auto g, fx.conn->exec(std::move(get)));
    final_owner = g.value.str;
  });
  // The duplicate: two workers process (and would deliver) the same message.
  CHECK(w1_won);
  CHECK(w2_won);
  CHECK(w1_won + w2_won == 2);
  CHECK(final_owner == "w2");  // worker 1's claim was silently overwritten
}

TEST_CASE("claim.lua under the same interleaving: exactly one delivery") {
  redis_fixture fx;
  auto c1 = fx.connect();
  auto c2 = fx.connect();
  const std::string user = "alice";

  SUBCASE("worker 1 then worker 2, step by step") {
    std::string o1, o2;
    fx.run([&]() -> asio::awaitable<void> {
      // The check, the set and the delivery are one step: there is no point between them
      // where the other worker can look.
      const auto m = pushonce::test::bus_msg("4096", user);
      CO_LET(auto r1, pushonce::test::claim_one(*c1, fx.k, pushonce::test::claim_opts("w1"), m));
      CO_LET(auto r2, pushonce::test::claim_one(*c2, fx.k, pushonce::test::claim_opts("w2"), m));
      o1 = pushonce::test::outcome_of(r1);
      o2 = pushonce::test::outcome_of(r2);
      auto record = pushonce::lua::record_read(pushonce::test::record_at(fx.k, user, "4096"));
      CO_LET(auto g, fx.conn->exec(std::move(record)));
      CHECK(g.value.str == "1");
      auto xlen = cmd({"XLEN", fx.k.user(user, "inbox")});
      CO_LET(auto x, fx.conn->exec(std::move(xlen)));
      CHECK(x.value.integer == 1);
    });
    CHECK(o1 == "delivered 1");
    CHECK(o2 == "done 1");
  }

  SUBCASE("both issued before either has an answer") {
    std::vector<std::string> outcomes(2);
    fx.run([&]() -> asio::awaitable<void> {
      auto ex = co_await asio::this_coro::executor;
      async_latch done(ex, 2);
      const auto m = pushonce::test::bus_msg("8192", user);
      auto start = [&](std::shared_ptr<pushonce::redis::connection> c, std::string owner,
                       std::size_t slot) {
        asio::co_spawn(
            ex,
            [&, c, owner, slot]() -> asio::awaitable<void> {
              auto s = pushonce::test::claim_opts(owner);
              CO_LET(auto r, pushonce::test::claim_one(*c, fx.k, s, m));
              outcomes[slot] = pushonce::test::outcome_of(r);
              done.count_down();
            },
            asio::detached);
      };
      start(c1, "w1", 0);
      start(c2, "w2", 1);
      CO_DO(done.wait());
      auto xlen = cmd({"XLEN", fx.k.user(user, "inbox")});
      CO_LET(auto x, fx.conn->exec(std::move(xlen)));
      CHECK(x.value.integer == 1);
    });
    CHECK((outcomes[0] == "delivered 1") + (outcomes[1] == "delivered 1") == 1);
    CHECK((outcomes[0] == "done 1") + (outcomes[1] == "done 1") == 1);
  }
}

}  // namespace test_get_set_race_integration
