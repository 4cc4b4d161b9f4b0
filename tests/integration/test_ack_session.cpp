// session.lua and ack.lua through the core's script runner: the epoch is created once,
// acks never decrease, never pass the last delivered offset, compare as numbers, and an
// ack of another epoch changes nothing.
#include "core/redis/scripts.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_ack_session_integration {

namespace asio = boost::asio;
using pushonce::redis::result;
using pushonce::test::cmd;
using pushonce::test::redis_fixture;

namespace {

// {epoch, offset, acked, rotated} as "E1 0 0" ("E2 3 0 rotated" when the epoch was replaced).
std::string session_of(const result& r) {
  if (!r.ok() || r.value.elements.size() != 4) return "bad reply: " + r.value.str;
  return r.value.at(0).str + " " + std::to_string(r.value.at(1).integer) + " " +
         std::to_string(r.value.at(2).integer) + (r.value.at(3).integer == 1 ? " rotated" : "");
}

long long acked_of(const result& r) {
  REQUIRE_MESSAGE(r.ok(), r.value.str);
  REQUIRE(r.value.kind == pushonce::redis::reply::type::integer);
  return r.value.integer;
}

// The id of the i-th message to `user`: i*4096 + a source of the user's own (message ids
// are unique across users, and claim records are kept per id).
std::string id_of(const std::string& user, int i) {
  static std::map<std::string, int> sources;
  auto [it, added] = sources.try_emplace(user, static_cast<int>(sources.size()) + 1);
  return std::to_string(static_cast<long long>(i) * 4096 + it->second);
}

// Claims and delivers messages from..to (ids id_of(user, i)) to user through claim.lua, so
// offsets from..to exist. The epoch is only used when the user has none.
asio::awaitable<void> deliver_n(redis_fixture& fx, std::string user, int from, int to) {
  for (int i = from; i <= to; ++i) {
    const std::string id = id_of(user, i);
    auto s = pushonce::test::claim_opts("w");
    s.epoch = "E-other";
    auto m = pushonce::test::bus_msg(id, user);
    CO_LET(auto c, pushonce::test::claim_one(*fx.conn, fx.k, s, m));
    REQUIRE(c.ok());
    CHECK(pushonce::test::outcome_of(c) == "delivered " + std::to_string(i));
  }
}

}  // namespace

TEST_CASE("session: the epoch is created once; offset and acked start at 0") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto s1, pushonce::test::session(*fx.conn, fx.k, "alice", "E1"));
    CHECK(session_of(s1) == "E1 0 0");
    CO_LET(auto s2, pushonce::test::session(*fx.conn, fx.k, "alice", "E2"));
    CHECK(session_of(s2) == "E1 0 0");
    auto pttl = cmd({"PTTL", fx.k.user("alice", "meta")});
    CO_LET(auto t1, fx.conn->exec(pttl));
    CHECK(t1.value.integer == -1);  // no idle ttl asked for

    CO_LET(auto s3, pushonce::test::session(*fx.conn, fx.k, "bob", "E7", 600000));
    CHECK(session_of(s3) == "E7 0 0");
    auto pttl_b = cmd({"PTTL", fx.k.user("bob", "meta")});
    CO_LET(auto t2, fx.conn->exec(pttl_b));
    CHECK(t2.value.integer > 590000);
    CHECK(t2.value.integer <= 600000);

    // Deliveries keep the stored epoch and count the offset.
    CO_DO(deliver_n(fx, "alice", 1, 3));
    CO_LET(auto s4, pushonce::test::session(*fx.conn, fx.k, "alice", "E3"));
    CHECK(session_of(s4) == "E1 3 0");

    CO_LET(auto bad, pushonce::test::session(*fx.conn, fx.k, "alice", ""));
    CHECK(bad.value.error_code() == "bad_request");
  });
}

TEST_CASE("ack: never decreases, never beyond the offset, numeric, epoch-checked") {
  redis_fixture fx;
  const std::string u = "carol";
  fx.run([&]() -> asio::awaitable<void> {
    // Nothing delivered yet: acks are clamped to offset 0 and create nothing.
    CO_LET(auto a0, pushonce::test::ack(*fx.conn, fx.k, "nobody", 3));
    CHECK(acked_of(a0) == 0);
    auto exists = cmd({"EXISTS", fx.k.user("nobody", "meta")});
    CO_LET(auto e, fx.conn->exec(exists));
    CHECK(e.value.integer == 0);

    CO_LET(auto s, pushonce::test::session(*fx.conn, fx.k, u, "E1"));
    CHECK(session_of(s) == "E1 0 0");
    CO_DO(deliver_n(fx, u, 1, 9));

    CO_LET(auto a5, pushonce::test::ack(*fx.conn, fx.k, u, 5));
    CHECK(acked_of(a5) == 5);
    CO_LET(auto a3, pushonce::test::ack(*fx.conn, fx.k, u, 3));
    CHECK(acked_of(a3) == 5);  // never decreases
    CO_LET(auto a99, pushonce::test::ack(*fx.conn, fx.k, u, 99));
    CHECK(acked_of(a99) == 9);  // never beyond the last delivered offset
    CO_LET(auto a9, pushonce::test::ack(*fx.conn, fx.k, u, 9));
    CHECK(acked_of(a9) == 9);

    CO_DO(deliver_n(fx, u, 10, 10));
    CO_LET(auto a10, pushonce::test::ack(*fx.conn, fx.k, u, 10));
    CHECK(acked_of(a10) == 10);  // 10 > 9 as numbers ("10" < "9" as strings)
    auto acked = cmd({"HGET", fx.k.user(u, "meta"), "acked"});
    CO_LET(auto h, fx.conn->exec(acked));
    CHECK(h.value.str == "10");
    CO_LET(auto a9b, pushonce::test::ack(*fx.conn, fx.k, u, 9));
    CHECK(acked_of(a9b) == 10);

    // Another epoch's offset says nothing about this one.
    CO_DO(deliver_n(fx, u, 11, 12));
    CO_LET(auto other, pushonce::test::ack(*fx.conn, fx.k, u, 12, "E0"));
    CHECK(acked_of(other) == 10);
    CO_LET(auto h2, fx.conn->exec(acked));
    CHECK(h2.value.str == "10");
    CO_LET(auto same, pushonce::test::ack(*fx.conn, fx.k, u, 11, "E1"));
    CHECK(acked_of(same) == 11);
    CO_LET(auto plain, pushonce::test::ack(*fx.conn, fx.k, u, 12));
    CHECK(acked_of(plain) == 12);

    CO_LET(auto s2, pushonce::test::session(*fx.conn, fx.k, u, "E9"));
    CHECK(session_of(s2) == "E1 12 12");

    for (const char* bad : {"-1", "1.5", "abc", ""}) {
      CAPTURE(bad);
      // Past the builder (it takes a number): the script's own check of its argument.
      std::vector<std::string> ks{fx.k.user(u, "meta")};
      std::vector<std::string> as{bad};
      CO_LET(auto r, pushonce::test::run_script(*fx.conn, "ack", std::move(ks), std::move(as)));
      CHECK(r.value.error_code() == "bad_request");
    }
    CO_LET(auto h3, fx.conn->exec(acked));
    CHECK(h3.value.str == "12");
  });
}

TEST_CASE("session: a since offset beyond the counter (failover) rotates the epoch, once") {
  redis_fixture fx;
  const std::string u = "dave";
  using since = pushonce::lua::session_since;
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto s0, pushonce::test::session(*fx.conn, fx.k, u, "E1"));
    CHECK(session_of(s0) == "E1 0 0");
    CO_DO(deliver_n(fx, u, 1, 5));
    CO_LET(auto a, pushonce::test::ack(*fx.conn, fx.k, u, 2));
    CHECK(acked_of(a) == 2);

    // A client at or behind the counter resumes in the same epoch.
    CO_LET(auto s1, pushonce::test::session(*fx.conn, fx.k, u, "E2", -1, since{"E1", 5}));
    CHECK(session_of(s1) == "E1 5 2");
    CO_LET(auto s2, pushonce::test::session(*fx.conn, fx.k, u, "E2", -1, since{"E1", 0}));
    CHECK(session_of(s2) == "E1 5 2");
    // Another epoch's offset says nothing: no rotation.
    CO_LET(auto s3, pushonce::test::session(*fx.conn, fx.k, u, "E2", -1, since{"E0", 99}));
    CHECK(session_of(s3) == "E1 5 2");

    // The failover: the promoted replica's counter is behind what the client saw.
    // (the claim records of 4 and 5 are in the same slot: gone with them)
    auto lower = cmd({"HSET", fx.k.user(u, "meta"), "offset", "3"});
    CO_DO(fx.conn->exec(lower));
    for (int i : {4, 5}) {
      auto forget = pushonce::test::record_forget(pushonce::test::record_at(fx.k, u, id_of(u, i)));
      CO_DO(fx.conn->exec(forget));
    }
    // the replica's inbox ends at 3-0 (a stream's last id never goes back: rewrite it)
    auto drop = cmd({"DEL", fx.k.user(u, "inbox")});
    CO_DO(fx.conn->exec(drop));
    for (int i = 1; i <= 3; ++i) {
      auto add = cmd({"XADD", fx.k.user(u, "inbox"), std::to_string(i) + "-0", "f", "x"});
      CO_DO(fx.conn->exec(add));
    }
    CO_LET(auto s4, pushonce::test::session(*fx.conn, fx.k, u, "E2", 600000, since{"E1", 5}));
    CHECK(session_of(s4) == "E2 3 2 rotated");  // offsets and acked kept, new epoch
    auto pttl = cmd({"PTTL", fx.k.user(u, "meta")});
    CO_LET(auto t, fx.conn->exec(pttl));
    CHECK(t.value.integer > 0);  // the idle ttl still applies
    // A second client of the old epoch (another tab): no second rotation.
    CO_LET(auto s5, pushonce::test::session(*fx.conn, fx.k, u, "E3", -1, since{"E1", 5}));
    CHECK(session_of(s5) == "E2 3 2");
    // Deliveries continue the counter in the new epoch.
    CO_DO(deliver_n(fx, u, 4, 4));
    CO_LET(auto s6, pushonce::test::session(*fx.conn, fx.k, u, "E3", -1, since{"E2", 4}));
    CHECK(session_of(s6) == "E2 4 2");

    // A live session that saw an offset again with another id asks for a rotation ('r').
    CO_LET(auto s7, pushonce::test::session(*fx.conn, fx.k, u, "E4", -1, since{"E2", 4, true}));
    CHECK(session_of(s7) == "E4 4 2 rotated");
    CO_LET(auto s8, pushonce::test::session(*fx.conn, fx.k, u, "E5", -1, since{"E2", 4, true}));
    CHECK(session_of(s8) == "E4 4 2");  // already rotated by someone else: compare-and-set

    // A user with no meta yet: the since is of nothing stored; the new epoch is created.
    CO_LET(auto s9, pushonce::test::session(*fx.conn, fx.k, "erin", "E6", -1, since{"E1", 9}));
    CHECK(session_of(s9) == "E6 0 0");

    for (const char* bad : {"-1", "x", "", "1234567890123456"}) {
      CAPTURE(bad);
      std::vector<std::string> ks{fx.k.user(u, "meta")};
      std::vector<std::string> as{"E7", "", "E4", bad};
      CO_LET(auto r, pushonce::test::run_script(*fx.conn, "session", std::move(ks), std::move(as)));
      CHECK(r.value.error_code() == "bad_request");
    }
    CO_LET(auto s10, pushonce::test::session(*fx.conn, fx.k, u, "E8"));
    CHECK(session_of(s10) == "E4 4 2");  // the bad calls changed nothing
  });
}

}  // namespace test_ack_session_integration
