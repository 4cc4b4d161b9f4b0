// lua/revoke.lua against a real redis-server, called as POST /api/disconnect and the leader
// CLI call it (core/disconnect): the revocation's field and the key's expiry (its lifetime
// cap), expired revocations dropped, the broadcast, bad input.
#include "core/disconnect.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/redis/scripts.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_revoke_script_integration {

namespace asio = boost::asio;
namespace lua = pushonce::lua;
using namespace std::chrono_literals;
using pushonce::disconnect_user;
using pushonce::errc;
using pushonce::test::cmd;
using pushonce::test::redis_fixture;

TEST_CASE("revoke.lua: a revocation is a field of NS:{revoked} that expires with its lifetime") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    const auto key = lua::revoked_key(fx.k);
    CO_LET(auto d, disconnect_user(fx.conn, fx.k, "ada", false, 60s));
    REQUIRE(d);
    CHECK(d.value().until_ms == 0);
    CHECK(d.value().receivers == 0);
    CO_LET(auto none, fx.conn->exec(cmd({"EXISTS", key})));
    CHECK(none.value.integer == 0);  // a disconnect alone writes nothing

    CO_LET(auto r, disconnect_user(fx.conn, fx.k, "ada", true, 60s));
    REQUIRE(r);
    CHECK(r.value().until_ms == r.value().at_ms + 60'000);
    CO_LET(auto field, fx.conn->exec(cmd({"HGET", key, "ada"})));
    CHECK(field.value.str ==
          std::to_string(r.value().at_ms) + ":" + std::to_string(r.value().until_ms));
    CO_LET(auto ttl, fx.conn->exec(cmd({"PTTL", key})));
    CHECK(ttl.value.integer > 0);
    CHECK(ttl.value.integer <= 60'000);

    // A longer one for another user: the key lives as long as the longest.
    CO_LET(auto r2, disconnect_user(fx.conn, fx.k, "bob", true, 3600s));
    REQUIRE(r2);
    CO_LET(auto ttl2, fx.conn->exec(cmd({"PTTL", key})));
    CHECK(ttl2.value.integer > 60'000);
    // A shorter later one does not shorten the key under bob's.
    CO_LET(auto r3, disconnect_user(fx.conn, fx.k, "cy", true, 1s));
    REQUIRE(r3);
    CO_LET(auto ttl3, fx.conn->exec(cmd({"PTTL", key})));
    CHECK(ttl3.value.integer > 60'000);

    // The snapshot a gateway loads: every live revocation.
    CO_LET(auto all, fx.conn->exec(lua::revocations_snapshot_command(fx.k)));
    REQUIRE(all.value.is_array());
    CHECK(all.value.elements.size() == 6);
  });
}

TEST_CASE("revoke.lua: expired revocations are dropped by the next one") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    const auto key = lua::revoked_key(fx.k);
    // An entry already expired (as if written long ago) and one still running.
    CO_LET(auto w,
           fx.conn->exec(cmd({"HSET", key, "old", "1000:2000", "live", "1000:99999999999999"})));
    REQUIRE(w.ok());
    CO_LET(auto z,
           fx.conn->exec(cmd({"ZADD", key + ":until", "2000", "old", "99999999999999", "live"})));
    REQUIRE(z.ok());
    CO_LET(auto r, disconnect_user(fx.conn, fx.k, "ada", true, 10s));
    REQUIRE(r);
    CO_LET(auto old, fx.conn->exec(cmd({"HEXISTS", key, "old"})));
    CHECK(old.value.integer == 0);
    CO_LET(auto live, fx.conn->exec(cmd({"HEXISTS", key, "live"})));
    CHECK(live.value.integer == 1);
    CO_LET(auto zold, fx.conn->exec(cmd({"ZSCORE", key + ":until", "old"})));
    CHECK(zold.value.is_nil());
    // A shorter revocation of a user does not cut a longer one short.
    CO_LET(auto longer, disconnect_user(fx.conn, fx.k, "bob", true, 3600s));
    REQUIRE(longer);
    CO_LET(auto shorter, disconnect_user(fx.conn, fx.k, "bob", true, 1s));
    REQUIRE(shorter);
    CHECK(shorter.value().until_ms == longer.value().until_ms);
  });
}

TEST_CASE("revoke.lua: the broadcast reaches a subscriber of the control channel") {
  redis_fixture fx;
  pushonce::test::received got;
  auto sub = fx.subscriber(got);
  fx.run([&]() -> asio::awaitable<void> {
    auto ch = lua::control_channel(fx.k);
    auto ec = co_await sub->subscribe(std::move(ch));
    REQUIRE_FALSE(ec);
    CO_LET(auto r, disconnect_user(fx.conn, fx.k, "ada", true, 5s));
    REQUIRE(r);
    CHECK(r.value().receivers == 1);
    CO_LET(auto d, disconnect_user(fx.conn, fx.k, "bob", false, 5s));
    REQUIRE(d);
    CHECK(d.value().receivers == 1);
    // Both broadcasts arrive, in order: a revocation, then a disconnect only.
    const auto control = lua::control_channel(fx.k);
    CO_LET(bool heard, pushonce::test::co_wait_until([&] { return got.count(control) >= 2; }, 5s));
    REQUIRE(heard);
    auto said = got.payloads(control);
    CHECK(said.at(0).rfind("r ", 0) == 0);
    CHECK(said.at(1) == "d bob");
  });
}

TEST_CASE("revoke.lua: bad input is refused before Redis and by the script") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto bad_user, disconnect_user(fx.conn, fx.k, "a b", false, 5s));
    REQUIRE_FALSE(bad_user);
    CHECK(bad_user.error().code == errc::bad_request);
    CO_LET(auto bad_life, disconnect_user(fx.conn, fx.k, "ada", true, 0s));
    REQUIRE_FALSE(bad_life);
    CHECK(bad_life.error().code == errc::bad_request);
    // The script itself checks its arguments too (a caller that skipped the checks).
    std::vector<pushonce::redis::command> raw{
        lua::script_command(lua::revoke_for(fx.k, "ada", true, 0ms))};
    CO_LET(auto rs, pushonce::redis::eval_all(*fx.conn, pushonce::redis::get_script("revoke"),
                                              std::move(raw)));
    CHECK(rs.at(0).value.is_error());
    CHECK(rs.at(0).value.error_code() == "bad_request");
  });
}

}  // namespace test_revoke_script_integration
