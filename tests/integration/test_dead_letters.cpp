// Dead letters on a real redis-server: the worker's claim_client adds an entry only when
// dead_letter.lua marks the message (one script on a single Redis); dead_letter_add.lua and
// dead_letter.lua count what the stream's trim drops; replay.lua (lua::replay_for)
// re-drives only a message marked dead, removes every entry of its id, and refuses a
// delivered or already replayed one with not_dead.
#include "core/lua/replay.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/dead_letter_entry.hpp"
#include "core/message.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"
#include "worker/claim_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_dead_letters_integration {

namespace asio = boost::asio;
namespace redis = pushonce::redis;
using namespace std::chrono_literals;
using pushonce::bus_message;
using pushonce::test::bus_msg;
using pushonce::test::claim_one;
using pushonce::test::claim_opts;
using pushonce::test::cmd;
using pushonce::test::co_let_lapse;
using pushonce::test::co_wait_until;
using pushonce::test::outcome_of;
using pushonce::test::received;
using pushonce::test::record_at;
using pushonce::test::redis_fixture;

namespace {

// Coroutine parameters by value: CO_LET awaits after the call's full expression.
asio::awaitable<long long> xlen(redis_fixture& fx, std::string key) {
  auto c = cmd({"XLEN", key});
  CO_LET(auto r, fx.conn->exec(std::move(c)));
  co_return r.value.integer;
}

asio::awaitable<std::string> record(redis_fixture& fx, std::string user, std::string id) {
  auto c = pushonce::lua::record_read(record_at(fx.k, user, id));
  CO_LET(auto r, fx.conn->exec(std::move(c)));
  co_return r.value.is_string() ? r.value.str : std::string("(nil)");
}

// A dead-letter entry for `m` as a worker writes it; its stream id.
asio::awaitable<std::string> add_entry(redis_fixture& fx, bus_message m) {
  auto c = cmd({"XADD", fx.k.plain("dead-letters"), "*", "id", m.id, "user", m.user, "src", m.src,
                "reason", "test", "attempts", "5", "m", m.raw});
  CO_LET(auto r, fx.conn->exec(std::move(c)));
  co_return r.value.str;
}

pushonce::lua::replay_request replay_of(const pushonce::keys& k, const bus_message& m,
                                        std::vector<std::string> entries) {
  pushonce::lua::replay_request r;
  r.id = m.id;
  r.user = m.user;
  r.outbox = k.bus(0, "outbox");
  r.message = m.raw;
  r.entries = std::move(entries);
  r.dedup_window = 60s;
  return r;
}

asio::awaitable<pushonce::redis::result> replay(redis_fixture& fx, pushonce::lua::replay_request r,
                                                bool cluster = false) {
  CO_LET(auto res,
         pushonce::lua::run_script(*fx.conn, pushonce::lua::replay_for(fx.k, cluster, r)));
  co_return res;
}

}  // namespace

TEST_CASE("dead letters: a refused mark (lease lapsed) writes no entry; a mark writes one") {
  redis_fixture fx;
  const auto m = bus_msg("4096", "ivy");
  pushonce::worker::claim_options o;
  o.lease = 30ms;
  o.dedup_window = 60s;
  pushonce::worker::claim_client claims(fx.conn, fx.k, o);
  const auto stream = fx.k.plain("dead-letters");
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto l1, claim_one(*fx.conn, fx.k, claim_opts("w1", 30), m, true));
    CHECK(outcome_of(l1) == "won 1");
    CO_DO(co_let_lapse(80ms, "w1's 30 ms lease"));
    // w1's lease lapsed: the mark is refused, and nothing is listed.
    CO_LET(auto late, claims.dead_letter(m, "w1", "poison", 1));
    REQUIRE(late);
    CHECK_FALSE(late.value().marked);
    CO_LET(long long none, xlen(fx, stream));
    CHECK(none == 0);
    CO_LET(std::string leased, record(fx, "ivy", "4096"));
    CHECK(leased.rfind("l:w1:", 0) == 0);

    // The next holder (the sweeper's re-drive) marks it: one entry, with the record.
    CO_LET(auto l2, claim_one(*fx.conn, fx.k, claim_opts("w2", 60000), m, true));
    CHECK(outcome_of(l2) == "won 2");
    CO_LET(auto dead, claims.dead_letter(m, "w2", "poison", 2));
    REQUIRE(dead);
    CHECK(dead.value().marked);
    CHECK(dead.value().trimmed == 0);
    CO_LET(long long one, xlen(fx, stream));
    CHECK(one == 1);
    CO_LET(std::string x, record(fx, "ivy", "4096"));
    CHECK(x == "x:2:poison");
    auto range = cmd({"XRANGE", stream, "-", "+"});
    CO_LET(auto e, fx.conn->exec(std::move(range)));
    REQUIRE(e.value.elements.size() == 1);
    const auto& f = e.value.elements[0].at(1);
    CHECK(f.field("id").str == "4096");
    CHECK(f.field("user").str == "ivy");
    CHECK(f.field("src").str == "bus:0");
    CHECK(f.field("attempts").str == "2");
    CHECK(f.field("m").str == m.raw);
    // Marked already: a second call is refused and adds nothing.
    CO_LET(auto again, claims.dead_letter(m, "w2", "poison", 2));
    REQUIRE(again);
    CHECK_FALSE(again.value().marked);
    CO_LET(long long still, xlen(fx, stream));
    CHECK(still == 1);
  });
}

TEST_CASE("dead letters: entries the stream's trim drops are counted") {
  redis_fixture fx;
  const auto stream = fx.k.plain("dead-letters");
  fx.run([&]() -> asio::awaitable<void> {
    // 10,250 entries: MAXLEN ~ 10000 trims whole nodes (100 entries each) on the next add.
    auto fill =
        cmd({"EVAL", "for i = 1, 10250 do redis.call('XADD', KEYS[1], '*', 'id', i) end return 1",
             "1", stream});
    CO_LET(auto f, fx.conn->exec(std::move(fill)));
    REQUIRE(f.ok());
    CO_LET(long long before, xlen(fx, stream));
    CO_LET(auto added,
           pushonce::lua::run_script(*fx.conn, pushonce::dead_letter_entry(
                                                   fx.k, "", "", "", "malformed", 0, "not json")));
    REQUIRE(added.ok());
    auto trimmed = pushonce::parse_dead_letter_entry_reply(added.value);
    REQUIRE(trimmed);
    CO_LET(long long after, xlen(fx, stream));
    CHECK(*trimmed > 0);
    CHECK(*trimmed == before + 1 - after);
    CHECK(after <= pushonce::dead_letters_maxlen + 100);

    // dead_letter.lua (a single Redis) answers what its own add trimmed.
    const auto m = bus_msg("4096", "ivy");
    auto more =
        cmd({"EVAL", "for i = 1, 300 do redis.call('XADD', KEYS[1], '*', 'id', i) end return 1",
             "1", stream});
    CO_LET(auto f2, fx.conn->exec(std::move(more)));
    REQUIRE(f2.ok());
    CO_LET(auto l, claim_one(*fx.conn, fx.k, claim_opts("w1", 60000), m, true));
    CHECK(outcome_of(l) == "won 1");
    CO_LET(long long before2, xlen(fx, stream));
    CO_LET(auto d, pushonce::test::mark_dead(*fx.conn, fx.k, m, "w1", "poison"));
    auto parsed = d.ok() ? pushonce::lua::parse_dead_letter_reply(d.value) : std::nullopt;
    REQUIRE(parsed);
    CHECK(parsed->marked);
    CO_LET(long long after2, xlen(fx, stream));
    CHECK(parsed->trimmed > 0);
    CHECK(parsed->trimmed == before2 + 1 - after2);
  });
}

TEST_CASE("replay.lua: a delivered message is refused (not_dead), however many entries") {
  redis_fixture fx;
  const auto m = bus_msg("4096", "dora");
  const auto outbox = fx.k.bus(0, "outbox");
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto d, claim_one(*fx.conn, fx.k, claim_opts("w1"), m));
    CHECK(outcome_of(d) == "delivered 1");
    CO_LET(std::string e1, add_entry(fx, m));
    CO_LET(std::string e2, add_entry(fx, m));
    for (int i = 0; i < 2; ++i) {
      CO_LET(auto r, replay(fx, replay_of(fx.k, m, {e1, e2})));
      CHECK(r.value.error_code() == "not_dead");
    }
    // Nothing written: no outbox entry, the record and the entries as they were.
    CO_LET(long long published, xlen(fx, outbox));
    CHECK(published == 0);
    CO_LET(std::string rec, record(fx, "dora", "4096"));
    CHECK(rec == "1");
    CO_LET(long long listed, xlen(fx, fx.k.plain("dead-letters")));
    CHECK(listed == 2);
    CO_LET(long long inbox, xlen(fx, fx.k.user("dora", "inbox")));
    CHECK(inbox == 1);
  });
}

TEST_CASE("replay.lua: a message marked dead is re-driven once; every entry of it goes") {
  redis_fixture fx;
  received bus;
  auto sub = fx.subscriber(bus);
  const auto m = bus_msg("4096", "eli");
  const auto other = bus_msg("8192", "eli");
  const auto outbox = fx.k.bus(0, "outbox");
  const auto bus_ch = fx.k.bus_channel();
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = bus_ch;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);
    CO_LET(auto l, claim_one(*fx.conn, fx.k, claim_opts("w1", 60000), m, true));
    CHECK(outcome_of(l) == "won 1");
    CO_LET(auto dead, pushonce::test::mark_dead(*fx.conn, fx.k, m, "w1", "poison"));
    CHECK(pushonce::test::marked_of(dead) == 1);
    CO_LET(std::string e2, add_entry(fx, m));  // a second entry of the same id
    CO_LET(std::string e3, add_entry(fx, other));
    auto range = cmd({"XRANGE", fx.k.plain("dead-letters"), "-", "+"});
    CO_LET(auto listed, fx.conn->exec(range));
    REQUIRE(listed.value.elements.size() == 3);
    std::string e1 = listed.value.elements[0].at(0).str;

    CO_LET(auto r, replay(fx, replay_of(fx.k, m, {e1, e2})));
    REQUIRE(r.ok());
    CHECK(r.value.integer == 2);
    CO_LET(long long published, xlen(fx, outbox));
    CHECK(published == 1);
    CO_LET(std::string rec, record(fx, "eli", "4096"));
    CHECK(rec == "r:0");
    CO_LET(auto left, fx.conn->exec(range));
    REQUIRE(left.value.elements.size() == 1);
    CHECK(left.value.elements[0].at(0).str == e3);
    CO_LET(bool heard, co_wait_until([&] { return bus.count(bus_ch) == 1; }, 2s));
    CHECK(heard);

    // Again (e.g. after a CLI timeout): refused, nothing published.
    CO_LET(auto again, replay(fx, replay_of(fx.k, m, {e1, e2})));
    CHECK(again.value.error_code() == "not_dead");
    CO_LET(auto none, replay(fx, replay_of(fx.k, m, {})));
    CHECK(none.value.error_code() == "not_dead");
    CO_LET(long long still, xlen(fx, outbox));
    CHECK(still == 1);

    // The worker claims the replayed message as any other: delivered once.
    CO_LET(auto d1, claim_one(*fx.conn, fx.k, claim_opts("w2"), m));
    CHECK(outcome_of(d1) == "delivered 1");
    CO_LET(auto d2, claim_one(*fx.conn, fx.k, claim_opts("w3"), m));
    CHECK(outcome_of(d2) == "done 1");
    CO_LET(auto after, replay(fx, replay_of(fx.k, m, {})));
    CHECK(after.value.error_code() == "not_dead");
    CO_DO(pushonce::test::co_observe_quiet(100ms, "a frame from the refused replay"));
    CHECK(bus.count(bus_ch) == 1);
  });
}

TEST_CASE("replay.lua: no entry is not_found; an entry whose mark expired is re-driven") {
  redis_fixture fx;
  const auto m = bus_msg("4096", "fay");
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto nf, replay(fx, replay_of(fx.k, m, {})));
    CHECK(nf.value.error_code() == "not_found");
    // An entry but no record (the mark lived one dedup window): re-driven.
    CO_LET(std::string e1, add_entry(fx, m));
    CO_LET(auto r, replay(fx, replay_of(fx.k, m, {e1})));
    REQUIRE(r.ok());
    CHECK(r.value.integer == 1);
    CO_LET(std::string rec, record(fx, "fay", "4096"));
    CHECK(rec == "r:0");
    // An entry id that is no longer there (another replay removed it) does not count.
    CO_LET(auto stale, replay(fx, replay_of(fx.k, m, {e1})));
    CHECK(stale.value.error_code() == "not_dead");
  });
}

TEST_CASE("replay.lua, a cluster's call: only the record; a second is refused") {
  redis_fixture fx;
  const auto m = bus_msg("4096", "gus");
  const auto at = pushonce::lua::claim_record_ref(fx.k, m);
  fx.run([&]() -> asio::awaitable<void> {
    auto set = cmd({"HSET", at.key, at.field, "x:5:poison"});
    CO_LET(auto s, fx.conn->exec(std::move(set)));
    REQUIRE(s.ok());
    CO_LET(auto r, replay(fx, replay_of(fx.k, m, {"1-1"}), true));
    REQUIRE(r.ok());
    auto get = pushonce::lua::record_read(at);
    CO_LET(auto g, fx.conn->exec(get));
    CHECK(g.value.str == "r:0");
    // The outbox and the stream are the caller's (other slots): untouched here.
    CO_LET(long long published, xlen(fx, fx.k.bus(0, "outbox")));
    CHECK(published == 0);
    // The caller's follow-ups: XADD, PUBLISH, XDEL.
    auto f = pushonce::lua::replay_followups(fx.k, replay_of(fx.k, m, {"1-1"}));
    REQUIRE(f.size() == 3);
    CHECK(f[0][0] == "XADD");
    CHECK(f[1][0] == "PUBLISH");
    CHECK(f[2] == pushonce::redis::command{"XDEL", fx.k.plain("dead-letters"), "1-1"});
    // An interrupted replay (entries still listed) may run again: the record dedups.
    CO_LET(auto again, replay(fx, replay_of(fx.k, m, {"1-1"}), true));
    CHECK(again.ok());
    auto delivered = cmd({"HSET", at.key, at.field, "7"});
    CO_LET(auto d, fx.conn->exec(std::move(delivered)));
    REQUIRE(d.ok());
    CO_LET(auto late, replay(fx, replay_of(fx.k, m, {"1-1"}), true));
    CHECK(late.value.error_code() == "not_dead");
    CHECK(late.value.error_message().find("offset 7") != std::string::npos);
  });
}

TEST_CASE("dead letters on a cluster: the mark first, the entry only after it; replay's steps" *
          doctest::test_suite("cluster")) {
  pushonce::test::cluster_fixture fx;
  const auto m = bus_msg("4096", "ivy");
  pushonce::worker::claim_options o;
  o.lease = 30ms;
  o.dedup_window = 60s;
  pushonce::worker::claim_client claims(fx.conn, fx.k, o);
  const auto stream = fx.k.plain("dead-letters");
  const auto record = pushonce::lua::claim_record_ref(fx.k, m);
  auto lease = [&](std::string owner, long long lease_ms) {
    auto s = claim_opts(std::move(owner), lease_ms);
    std::vector<bus_message> batch{m};
    return pushonce::lua::run_script(*fx.conn, pushonce::lua::claim_for(fx.k, s, batch, {true}));
  };
  auto get_record = [&] { return fx.conn->exec(pushonce::lua::record_read(record)); };
  auto len = [&] { return fx.conn->exec(redis::command{"XLEN", stream}); };
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto l1, lease("w1", 30));
    CHECK(outcome_of(l1) == "won 1");
    CO_DO(co_let_lapse(80ms, "w1's 30 ms lease"));
    CO_LET(auto late, claims.dead_letter(m, "w1", "poison", 1));
    REQUIRE(late);
    CHECK_FALSE(late.value().marked);
    CO_LET(auto none, len());
    CHECK(none.value.integer == 0);
    CO_LET(auto l2, lease("w2", 60000));
    CHECK(outcome_of(l2) == "won 2");
    CO_LET(auto dead, claims.dead_letter(m, "w2", "poison", 2));
    REQUIRE(dead);
    CHECK(dead.value().marked);
    CO_LET(auto one, len());
    CHECK(one.value.integer == 1);
    CO_LET(auto x, get_record());
    CHECK(x.value.str == "x:2:poison");

    // replay: the record's step, then the follow-ups in their own slots.
    auto range = redis::command{"XRANGE", stream, "-", "+"};
    CO_LET(auto e, fx.conn->exec(range));
    REQUIRE(e.value.elements.size() == 1);
    auto req = replay_of(fx.k, m, {e.value.elements[0].at(0).str});
    CO_LET(auto r, pushonce::lua::run_script(*fx.conn, pushonce::lua::replay_for(fx.k, true, req)));
    REQUIRE(r.ok());
    CO_LET(auto rec, get_record());
    CHECK(rec.value.str == "r:0");
    CO_LET(auto rs, fx.conn->exec_all(pushonce::lua::replay_followups(fx.k, req)));
    for (auto& x2 : rs) CHECK(x2.ok());
    CO_LET(auto gone, len());
    CHECK(gone.value.integer == 0);
    auto outbox_len = redis::command{"XLEN", fx.k.bus(0, "outbox")};
    CO_LET(auto ob, fx.conn->exec(std::move(outbox_len)));
    CHECK(ob.value.integer == 1);
    // Again, with the entry id the first one saw: refused by the record's slot.
    CO_LET(auto again,
           pushonce::lua::run_script(*fx.conn, pushonce::lua::replay_for(fx.k, true, req)));
    CHECK(again.ok());  // r:0 with an entry the caller still lists: an interrupted replay
    auto delivered = redis::command{"HSET", record.key, record.field, "1"};
    CO_LET(auto d, fx.conn->exec(std::move(delivered)));
    REQUIRE(d.ok());
    CO_LET(auto refused,
           pushonce::lua::run_script(*fx.conn, pushonce::lua::replay_for(fx.k, true, req)));
    CHECK(refused.value.error_code() == "not_dead");
  });
}

}  // namespace test_dead_letters_integration
