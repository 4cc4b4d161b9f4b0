// claim_client::release on a real redis-server: a lease handed back by its holder is
// true, by a worker that no longer holds it false; either way an outcome, never a guess.
#include "worker/claim_client.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_claim_client_release_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::test::bus_msg;
using pushonce::test::claim_one;
using pushonce::test::claim_opts;
using pushonce::test::outcome_of;
using pushonce::test::redis_fixture;

TEST_CASE("claim_client: release is true for the holder, false for anyone else") {
  redis_fixture fx;
  const auto m = bus_msg("4100", "ivy");
  pushonce::worker::claim_options o;
  o.lease = 60s;
  o.dedup_window = 120s;
  pushonce::worker::claim_client claims(fx.conn, fx.k, o);
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto won, claim_one(*fx.conn, fx.k, claim_opts("w1", 60000), m, true));
    CHECK(outcome_of(won) == "won 1");
    CO_LET(auto other, claims.release(m, "w2"));
    REQUIRE(other);
    CHECK_FALSE(other.value());
    CO_LET(auto held, claims.release(m, "w1"));
    REQUIRE(held);
    CHECK(held.value());
    CO_LET(auto again, claims.release(m, "w1"));
    REQUIRE(again);
    CHECK_FALSE(again.value());
  });
}

}  // namespace test_claim_client_release_integration
