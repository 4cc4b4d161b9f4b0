// Proof of work's single use inside join.lua against a real redis-server: a verified
// solution joins once; the same solution again is refused bad_request (counted in
// refused_pow) without joining; a join refused for another reason does not use it up.
#include "core/queue_api.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/pow_challenge.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_pow_join_integration {

namespace asio = boost::asio;
using pushonce::pow_use;
using pushonce::queue_api;
using pushonce::test::cmd;
using pushonce::test::redis_fixture;

TEST_CASE("proof of work: join.lua uses a solution once, on any gateway") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{q};
    CO_DO(api.register_queues(std::move(queues)));
    // A verified solution as the gateway hands it on (the challenge's random part).
    pushonce::pow_gate gate("integration-secret");
    auto c = gate.issue("alice", q, 4, 1'700'000'000'000, "0123456789abcdef0123");
    std::string nonce;
    for (long long n = 0; nonce.empty(); ++n)
      if (pushonce::pow_solves(c.prefix, std::to_string(n), 4)) nonce = std::to_string(n);
    auto check =
        gate.verify("alice", q, 4, pushonce::pow_solution{c.id, nonce}, 1'700'000'000'000 + 10);
    REQUIRE(check.ok());
    pow_use use{check.token, check.ttl_ms};

    CO_LET(auto first, api.join(q, "alice", use));
    REQUIRE(first.has_value());
    CHECK(first.value().position == 1);
    CO_LET(auto mark, fx.conn->exec(cmd({"PTTL", fx.k.queue(q, "pow:" + check.token)})));
    CHECK(mark.value.integer > 0);
    CHECK(mark.value.integer <= check.ttl_ms);
    // Already queued: refused before the mark, so nothing more is counted.
    CO_LET(auto dup, api.join(q, "alice", use));
    CHECK(dup.error().code == pushonce::errc::already_queued);
    // The same solution for another join (another gateway, a replay): refused.
    CO_LET(auto again, api.join(q, "bob", use));
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().code == pushonce::errc::bad_request);
    CO_LET(auto listing, api.list(q, 10));
    CHECK(listing.value().users == std::vector<std::string>{"alice"});
    CO_LET(auto refused, fx.conn->exec(cmd({"HGET", fx.k.queue(q, "stats"), "refused_pow"})));
    CHECK(refused.value.str == "1");
    // A join without a proof of work is the script's business no more than before.
    CO_LET(auto plain, api.join(q, "carol"));
    CHECK(plain.has_value());
  });
}

}  // namespace test_pow_join_integration
