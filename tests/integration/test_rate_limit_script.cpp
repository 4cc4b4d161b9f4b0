// rate_limit.lua through lua::take_tokens against a real redis-server: a bucket starts full,
// refuses when empty with the wait until the cost is there, refills at its rate, is shared
// by every caller of the same key, expires when idle, and never holds the secret in a key.
#include "core/lua/rate_limit.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_rate_limit_script_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::lua::rate_limit_key;
using pushonce::lua::take_tokens;
using pushonce::test::cmd;
using pushonce::test::co_let_lapse;
using pushonce::test::redis_fixture;

TEST_CASE("rate_limit.lua: a token bucket in Redis") {
  redis_fixture fx;
  auto key = rate_limit_key(fx.k, "api", "secret-key");
  CHECK(key.find("secret") == std::string::npos);
  CHECK(key == rate_limit_key(fx.k, "api", "secret-key"));
  CHECK(key != rate_limit_key(fx.k, "api", "other-key"));
  fx.run([&]() -> asio::awaitable<void> {
    for (int i = 0; i < 3; ++i) {
      CO_LET(auto r, take_tokens(*fx.conn, key, 10, 3));
      REQUIRE(r);
      CHECK(r.value().allowed);
    }
    CO_LET(auto refused, take_tokens(*fx.conn, key, 10, 3));
    REQUIRE(refused);
    CHECK_FALSE(refused.value().allowed);
    CHECK(refused.value().retry_after > 0ms);
    CHECK(refused.value().retry_after <= 100ms);
    // A second connection (another gateway) sees the same bucket.
    auto other = fx.connect();
    CO_LET(auto also, take_tokens(*other, key, 10, 3));
    CHECK_FALSE(also.value().allowed);
    CO_DO(co_let_lapse(250ms, "2.5 tokens back at 10 a second"));
    CO_LET(auto again, take_tokens(*fx.conn, key, 10, 3, 2));
    CHECK(again.value().allowed);
    CO_LET(auto too_much, take_tokens(*fx.conn, key, 10, 3, 3));
    CHECK_FALSE(too_much.value().allowed);
    CHECK(too_much.value().retry_after >= 200ms);
    // The key expires once the bucket would be full again (burst / rate + 1 s).
    auto pttl_cmd = cmd({"PTTL", key});
    CO_LET(auto ttl, fx.conn->exec(std::move(pttl_cmd)));
    CHECK(ttl.value.integer > 0);
    CHECK(ttl.value.integer <= 1300);
    CO_LET(auto bad, take_tokens(*fx.conn, key, 0, 3));
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == pushonce::errc::bad_request);
  });
}

}  // namespace test_rate_limit_script_integration
