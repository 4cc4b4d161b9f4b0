// claim.lua (claim AND deliver a batch in one atomic call), release.lua and dead_letter.lua
// on the string claim record, through the core's builder (lua::claim_for,
// parse_claim_reply, parse_claim_record) and script runner (redis::eval_all): delivered /
// done / taken / won / dead / failed, many concurrent claimers with exactly one delivery
// per message, gap-free offsets, the frame in the inbox and on the user channel, a failed
// inbox write rolled back and retried after the lease, max attempts, release.
#include "core/lua/claim.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/message.hpp"
#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_claim_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::bus_message;
using pushonce::lua::record_read;
using pushonce::redis::result;
using pushonce::test::async_latch;
using pushonce::test::bus_msg;
using pushonce::test::claim_one;
using pushonce::test::claim_opts;
using pushonce::test::cmd;
using pushonce::test::co_let_lapse;
using pushonce::test::co_wait_until;
using pushonce::test::outcome_of;
using pushonce::test::outcomes_of;
using pushonce::test::received;
using pushonce::test::record_at;
using pushonce::test::redis_fixture;
using kind = pushonce::lua::claim_record::kind;

namespace {

pushonce::lua::claim_record record_of(const result& r) {
  REQUIRE_MESSAGE(r.ok(), r.value.str);
  auto rec = pushonce::lua::parse_claim_record(r.value);
  REQUIRE_MESSAGE(rec, "not a claim record: ", r.value.str);
  return *rec;
}

}  // namespace

TEST_CASE("claim: delivered, then done (also for the winner); the record; bad requests") {
  redis_fixture fx;
  const auto m = bus_msg("4096", "alice", R"({"n":1})");
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto w1, claim_one(*fx.conn, fx.k, claim_opts("w1"), m));
    CHECK(outcome_of(w1) == "delivered 1");
    REQUIRE(w1.value.elements.size() == 2);
    CHECK(w1.value.at(0).kind == pushonce::redis::reply::type::string);
    CHECK(w1.value.at(1).kind == pushonce::redis::reply::type::integer);
    CO_LET(auto w2, claim_one(*fx.conn, fx.k, claim_opts("w2"), m));
    CHECK(outcome_of(w2) == "done 1");
    CO_LET(auto w1b, claim_one(*fx.conn, fx.k, claim_opts("w1"), m));
    CHECK(outcome_of(w1b) == "done 1");

    // The record is the string "<offset>", kept for the dedup window.
    auto get = record_read(record_at(fx.k, m));
    CO_LET(auto g, fx.conn->exec(std::move(get)));
    CHECK(g.value.str == "1");
    auto rec = record_of(g);
    CHECK(rec.state == kind::delivered);
    CHECK(rec.offset == 1);
    CHECK(rec.attempts == 1);
    auto pttl = cmd({"PTTL", record_at(fx.k, m).key});
    CO_LET(auto t, fx.conn->exec(std::move(pttl)));
    CHECK(t.value.integer > 55000);
    CHECK(t.value.integer <= 60000);

    // A bad lease / empty owner / empty epoch is a programming error: bad_request, nothing
    // stored.
    const auto other = bus_msg("8192", "alice");
    CO_LET(auto bad, claim_one(*fx.conn, fx.k, claim_opts("w1", 0), other));
    CHECK(bad.value.is_error());
    CHECK(bad.value.error_code() == "bad_request");
    CO_LET(auto noowner, claim_one(*fx.conn, fx.k, claim_opts(""), other));
    CHECK(noowner.value.error_code() == "bad_request");
    auto noepoch_opts = claim_opts("w1");
    noepoch_opts.epoch.clear();
    CO_LET(auto noepoch, claim_one(*fx.conn, fx.k, noepoch_opts, other));
    CHECK(noepoch.value.error_code() == "bad_request");
    auto exists = cmd({"HEXISTS", record_at(fx.k, other).key, record_at(fx.k, other).field});
    CO_LET(auto ex, fx.conn->exec(std::move(exists)));
    CHECK(ex.value.integer == 0);
  });
}

TEST_CASE("claim: 64 concurrent claimers of one batch on 8 connections, one delivery each") {
  redis_fixture fx;
  constexpr int connections = 8, claimers = 64, rounds = 150, per_batch = 6;
  std::vector<std::shared_ptr<pushonce::redis::connection>> conns;
  for (int i = 0; i < connections; ++i) conns.push_back(fx.connect());

  // Two users in one batch: offsets are per user.
  const std::vector<std::string> users{"bob", "dave"};
  int rounds_ok = 0, transport_errors = 0, other_replies = 0;
  std::map<std::string, std::map<std::string, long long>> offset_of;  // user -> id -> offset
  std::map<std::string, bus_message> message_of;                      // id -> message
  int offset_mismatches = 0;
  fx.run([&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    for (int round = 0; round < rounds; ++round) {
      std::vector<bus_message> batch;
      for (int i = 0; i < per_batch; ++i) {
        auto id = std::to_string((round * per_batch + i + 1) * 4096);
        batch.push_back(bus_msg(id, users[i % 2], R"({"n":)" + id + "}"));
        message_of[id] = batch.back();
      }
      async_latch done(ex, claimers);
      std::vector<int> delivered(per_batch, 0), already(per_batch, 0);
      for (int c = 0; c < claimers; ++c) {
        auto conn = conns[c % connections];
        auto s = claim_opts("w" + std::to_string(c), 30000);
        asio::co_spawn(
            ex,
            [&, conn, s, batch]() -> asio::awaitable<void> {
              CO_LET(auto r, pushonce::test::claim(*conn, fx.k, s, batch));
              auto parsed =
                  r.ok() ? pushonce::lua::parse_claim_reply(r.value, batch.size()) : std::nullopt;
              if (r.ec) {
                ++transport_errors;
              } else if (!parsed) {
                ++other_replies;
              } else {
                for (std::size_t i = 0; i < batch.size(); ++i) {
                  const auto& o = (*parsed)[i];
                  auto& known = offset_of[batch[i].user];
                  if (o.state == pushonce::lua::claim_state::delivered) {
                    ++delivered[i];
                    if (known.count(batch[i].id) && known[batch[i].id] != o.number)
                      ++offset_mismatches;
                    known[batch[i].id] = o.number;
                  } else if (o.state == pushonce::lua::claim_state::done) {
                    ++already[i];
                    if (known.count(batch[i].id) && known[batch[i].id] != o.number)
                      ++offset_mismatches;
                    known[batch[i].id] = o.number;
                  } else {
                    ++other_replies;
                  }
                }
              }
              done.count_down();
            },
            asio::detached);
      }
      CO_DO(done.wait());
      bool ok = true;
      for (int i = 0; i < per_batch; ++i)
        ok = ok && delivered[i] == 1 && already[i] == claimers - 1;
      rounds_ok += ok;
    }

    // Every inbox holds each of its user's messages once, at offsets 1..n without gaps,
    // each frame exactly render_frame(message, offset).
    for (const auto& u : users) {
      auto range = cmd({"XRANGE", fx.k.user(u, "inbox"), "-", "+"});
      CO_LET(auto inbox, fx.conn->exec(std::move(range)));
      const auto& known = offset_of[u];
      REQUIRE(inbox.value.elements.size() == known.size());
      CHECK(known.size() == static_cast<std::size_t>(rounds * per_batch / 2));
      std::map<long long, std::string> id_at;
      for (const auto& [id, off] : known) id_at[off] = id;
      std::size_t bad_frames = 0;
      for (std::size_t i = 0; i < inbox.value.elements.size(); ++i) {
        const auto& e = inbox.value.elements[i];
        const long long off = static_cast<long long>(i) + 1;
        if (e.at(0).str != std::to_string(off) + "-0" || !id_at.count(off) ||
            e.at(1).at(1).str != pushonce::render_frame(message_of[id_at[off]], off))
          ++bad_frames;
      }
      CHECK(bad_frames == 0);
      auto meta = cmd({"HGET", fx.k.user(u, "meta"), "offset"});
      CO_LET(auto mo, fx.conn->exec(std::move(meta)));
      CHECK(mo.value.str == std::to_string(known.size()));
    }
  });
  CHECK(transport_errors == 0);
  CHECK(other_replies == 0);
  CHECK(offset_mismatches == 0);
  CHECK(rounds_ok == rounds);
}

TEST_CASE("claim: the frame in the inbox and on the user channel; meta; epoch of a new user") {
  redis_fixture fx;
  received frames;
  auto sub = fx.subscriber(frames);
  const std::string user = "carol";
  const std::string channel = fx.k.user_channel(user);
  CHECK(channel == "t:{bus:0}:u:carol:ch");
  const auto m1 = bus_msg("4096", user, R"({"n":4096})");
  const auto m2 = bus_msg("8192", user, R"({"text":"hi \"there\"","n":[1,{}]})");
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = channel;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);

    std::vector<bus_message> batch{m1, m2};
    CO_LET(auto r, pushonce::test::claim(*fx.conn, fx.k, claim_opts("w1"), batch));
    CHECK(outcomes_of(r, 2) == std::vector<std::string>{"delivered 1", "delivered 2"});

    auto range = cmd({"XRANGE", fx.k.user(user, "inbox"), "-", "+"});
    CO_LET(auto inbox, fx.conn->exec(std::move(range)));
    REQUIRE(inbox.value.elements.size() == 2);
    const auto& e1 = inbox.value.elements[0];
    CHECK(e1.at(0).str == "1-0");
    REQUIRE(e1.at(1).elements.size() == 2);
    CHECK(e1.at(1).at(0).str == "f");
    CHECK(e1.at(1).at(1).str == pushonce::render_frame(m1, 1));
    CHECK(inbox.value.elements[1].at(0).str == "2-0");
    CHECK(inbox.value.elements[1].at(1).at(1).str == pushonce::render_frame(m2, 2));

    auto meta = cmd({"HMGET", fx.k.user(user, "meta"), "epoch", "offset"});
    CO_LET(auto mt, fx.conn->exec(std::move(meta)));
    CHECK(mt.value.at(0).str == "E1");
    CHECK(mt.value.at(1).str == "2");
    auto ttl = cmd({"PTTL", fx.k.user(user, "inbox")});
    CO_LET(auto t, fx.conn->exec(std::move(ttl)));
    CHECK(t.value.integer > 0);

    CO_LET(bool got, co_wait_until([&] { return frames.count(channel) >= 2; }, 2s));
    CHECK(got);
  });
  auto p = frames.payloads(channel);
  REQUIRE(p.size() == 2);
  CHECK(p[0] == pushonce::render_frame(m1, 1));
  CHECK(p[1] == pushonce::render_frame(m2, 2));
  CHECK(p[0] ==
        R"({"type":"message","id":"4096","offset":1,"kind":"message","data":{"n":4096},"ts":)" +
            std::to_string(m1.ts) + "}");
}

TEST_CASE("claim: a failed inbox write is 'failed', rolls the offset back, keeps the lease") {
  redis_fixture fx;
  const std::string user = "frank";
  const auto m = bus_msg("4096", user, R"({"n":1})");
  fx.run([&]() -> asio::awaitable<void> {
    // The user has an epoch already (so claim.lua does not drop a stale inbox), and the
    // inbox key is a plain string: XADD fails with WRONGTYPE.
    auto meta = cmd({"HSET", fx.k.user(user, "meta"), "epoch", "E0", "offset", "0"});
    CO_LET(auto h, fx.conn->exec(std::move(meta)));
    REQUIRE(h.ok());
    auto poison = cmd({"SET", fx.k.user(user, "inbox"), "not a stream"});
    CO_LET(auto p, fx.conn->exec(std::move(poison)));
    REQUIRE(p.ok());

    CO_LET(auto f, claim_one(*fx.conn, fx.k, claim_opts("w1", 150), m));
    auto o = outcome_of(f);
    CHECK(o.rfind("failed ", 0) == 0);
    CHECK(o.find("WRONGTYPE") != std::string::npos);

    auto off = cmd({"HGET", fx.k.user(user, "meta"), "offset"});
    CO_LET(auto o1, fx.conn->exec(off));
    CHECK(o1.value.str == "0");  // rolled back: offsets stay gap-free
    auto get = record_read(record_at(fx.k, m));
    CO_LET(auto g1, fx.conn->exec(get));
    auto rec = record_of(g1);
    CHECK(rec.state == kind::leased);
    CHECK(rec.owner == "w1");
    CHECK(rec.attempts == 1);

    // The lease is kept: nobody retries before it ends.
    CO_LET(auto t, claim_one(*fx.conn, fx.k, claim_opts("w2", 150), m));
    CHECK(outcome_of(t) == "taken 0");

    // The inbox is fixed; after the lease the retry delivers at offset 1, attempt 2.
    auto fix = cmd({"DEL", fx.k.user(user, "inbox")});
    CO_LET(auto d, fx.conn->exec(std::move(fix)));
    REQUIRE(d.ok());
    CO_DO(co_let_lapse(200ms, "w1's 150 ms lease"));
    CO_LET(auto r, claim_one(*fx.conn, fx.k, claim_opts("w2", 150), m));
    CHECK(outcome_of(r) == "delivered 1");
    CO_LET(auto g2, fx.conn->exec(get));
    CHECK(g2.value.str == "1:2");
    auto rec2 = record_of(g2);
    CHECK(rec2.state == kind::delivered);
    CHECK(rec2.offset == 1);
    CHECK(rec2.attempts == 2);
    CO_LET(auto o2, fx.conn->exec(off));
    CHECK(o2.value.str == "1");
    CO_LET(auto again, claim_one(*fx.conn, fx.k, claim_opts("w3", 150), m));
    CHECK(outcome_of(again) == "done 1");
  });
}

TEST_CASE("claim: a failed write inside a batch does not stop the other users' messages") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    auto meta = cmd({"HSET", fx.k.user("gina", "meta"), "epoch", "E0", "offset", "0"});
    CO_LET(auto h, fx.conn->exec(std::move(meta)));
    auto poison = cmd({"SET", fx.k.user("gina", "inbox"), "x"});
    CO_LET(auto p, fx.conn->exec(std::move(poison)));
    std::vector<bus_message> batch{bus_msg("4096", "hal"), bus_msg("8192", "gina"),
                                   bus_msg("12288", "hal")};
    CO_LET(auto r, pushonce::test::claim(*fx.conn, fx.k, claim_opts("w1"), batch));
    auto o = outcomes_of(r, 3);
    REQUIRE(o.size() == 3);
    CHECK(o[0] == "delivered 1");
    CHECK(o[1].rfind("failed ", 0) == 0);
    CHECK(o[2] == "delivered 2");
  });
}

TEST_CASE("claim: leases, max attempts -> won, then dead_letter.lua marks it dead") {
  redis_fixture fx;
  const std::string user = "ivy";
  const auto m = bus_msg("4096", user);
  fx.run([&]() -> asio::awaitable<void> {
    // Lease only (an empty tail): taken by the first, nothing delivered.
    CO_LET(auto l1, claim_one(*fx.conn, fx.k, claim_opts("w1", 60, 2), m, true));
    CHECK(outcome_of(l1) == "won 1");
    CO_LET(auto l1b, claim_one(*fx.conn, fx.k, claim_opts("w2", 60, 2), m));
    CHECK(outcome_of(l1b) == "taken 0");
    auto exists = cmd({"EXISTS", fx.k.user(user, "inbox")});
    CO_LET(auto e, fx.conn->exec(exists));
    CHECK(e.value.integer == 0);
    CO_DO(co_let_lapse(100ms, "w1's 60 ms lease"));
    CO_LET(auto l2, claim_one(*fx.conn, fx.k, claim_opts("w2", 60, 2), m, true));
    CHECK(outcome_of(l2) == "won 2");
    CO_DO(co_let_lapse(100ms, "w2's 60 ms lease"));
    // Attempt 3 of at most 2: a lease, no delivery, even with a tail.
    CO_LET(auto l3, claim_one(*fx.conn, fx.k, claim_opts("w3", 60000, 2), m));
    CHECK(outcome_of(l3) == "won 3");
    CO_LET(auto e2, fx.conn->exec(exists));
    CHECK(e2.value.integer == 0);
    auto get = record_read(record_at(fx.k, m));
    CO_LET(auto g, fx.conn->exec(get));
    auto rec = record_of(g);
    CHECK(rec.state == kind::leased);
    CHECK(rec.owner == "w3");
    CHECK(rec.attempts == 3);

    // Only the lease holder marks it dead.
    CO_LET(auto not_owner, pushonce::test::mark_dead(*fx.conn, fx.k, m, "w2", "poison"));
    CHECK(pushonce::test::marked_of(not_owner) == 0);
    CO_LET(auto dead, pushonce::test::mark_dead(*fx.conn, fx.k, m, "w3", "poison"));
    CHECK(pushonce::test::marked_of(dead) == 1);
    CO_LET(auto g2, fx.conn->exec(get));
    CHECK(g2.value.str == "x:3:poison");
    auto rec2 = record_of(g2);
    CHECK(rec2.state == kind::dead);
    CHECK(rec2.attempts == 3);
    CHECK(rec2.reason == "poison");
    CO_LET(auto after, claim_one(*fx.conn, fx.k, claim_opts("w4"), m));
    CHECK(outcome_of(after) == "dead 0");
    // A second mark is refused: the lease is gone.
    CO_LET(auto twice, pushonce::test::mark_dead(*fx.conn, fx.k, m, "w3", "poison"));
    CHECK(pushonce::test::marked_of(twice) == 0);
  });
}

TEST_CASE("claim: an expired lease cannot be marked dead by its former holder") {
  redis_fixture fx;
  const auto m = bus_msg("4096", "jack");
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto l1, claim_one(*fx.conn, fx.k, claim_opts("w1", 30), m, true));
    CHECK(outcome_of(l1) == "won 1");
    CO_DO(co_let_lapse(80ms, "w1's 30 ms lease"));
    CO_LET(auto late, pushonce::test::mark_dead(*fx.conn, fx.k, m, "w1", "poison"));
    CHECK(pushonce::test::marked_of(late) == 0);
    CO_LET(auto d, claim_one(*fx.conn, fx.k, claim_opts("w2"), m));
    CHECK(outcome_of(d) == "delivered 1");
    auto get = record_read(record_at(fx.k, m));
    CO_LET(auto g, fx.conn->exec(std::move(get)));
    CHECK(g.value.str == "1:2");
  });
}

TEST_CASE("release.lua: a released lease is claimable at once; only its holder releases") {
  redis_fixture fx;
  const std::string user = "bob";
  const auto m = bus_msg("8192", user);
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto w1, claim_one(*fx.conn, fx.k, claim_opts("w1", 60000), m, true));
    CHECK(outcome_of(w1) == "won 1");
    CO_LET(auto r0, pushonce::test::release(*fx.conn, fx.k, m, "w2"));
    CHECK(r0.value.integer == 0);  // only the holder hands a lease back
    CO_LET(auto w2, claim_one(*fx.conn, fx.k, claim_opts("w2", 60000), m));
    CHECK(outcome_of(w2) == "taken 0");
    CO_LET(auto r1, pushonce::test::release(*fx.conn, fx.k, m, "w1"));
    CHECK(r1.value.integer == 1);
    auto get = record_read(record_at(fx.k, m));
    CO_LET(auto g, fx.conn->exec(get));
    CHECK(g.value.str == "r:1");
    auto rec = record_of(g);
    CHECK(rec.state == kind::released);
    CHECK(rec.attempts == 1);
    auto pttl = cmd({"PTTL", record_at(fx.k, m).key});
    CO_LET(auto t, fx.conn->exec(std::move(pttl)));
    CHECK(t.value.integer > 0);  // KEEPTTL: still forgotten after the window
    // Without waiting for the 60 s lease; it is attempt 2.
    CO_LET(auto w2b, claim_one(*fx.conn, fx.k, claim_opts("w2", 60000), m));
    CHECK(outcome_of(w2b) == "delivered 1");
    CO_LET(auto g2, fx.conn->exec(get));
    CHECK(g2.value.str == "1:2");
    // Nothing to release once delivered.
    CO_LET(auto r2, pushonce::test::release(*fx.conn, fx.k, m, "w1"));
    CHECK(r2.value.integer == 0);
    CO_LET(auto g3, fx.conn->exec(get));
    CHECK(g3.value.str == "1:2");
  });
}

TEST_CASE("claim: a one-digit offset with attempts ('5:2') is read as done") {
  redis_fixture fx;
  const auto m = bus_msg("4096", "kim");
  fx.run([&]() -> asio::awaitable<void> {
    const auto at = record_at(fx.k, m);
    auto set = cmd({"HSET", at.key, at.field, "5:2"});
    CO_LET(auto s, fx.conn->exec(std::move(set)));
    REQUIRE(s.ok());
    CO_LET(auto r, claim_one(*fx.conn, fx.k, claim_opts("w1"), m));
    CHECK(outcome_of(r) == "done 5");
    auto set2 = cmd({"HSET", at.key, at.field, "12"});
    CO_LET(auto s2, fx.conn->exec(std::move(set2)));
    CO_LET(auto r2, claim_one(*fx.conn, fx.k, claim_opts("w1"), m));
    CHECK(outcome_of(r2) == "done 12");
  });
}

TEST_CASE("claim: records of one source's nearby ids share a bucket hash, kept a window") {
  redis_fixture fx;
  // Sequences 1..127 of source 5 share bucket 0; sequence 128 starts bucket 1.
  const auto first = bus_msg(std::to_string(1 * 4096 + 5), "ann");
  const auto second = bus_msg(std::to_string(127 * 4096 + 5), "ben");
  const auto next = bus_msg(std::to_string(128 * 4096 + 5), "ann");
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<bus_message> batch{first, second, next};
    CO_LET(auto r, pushonce::test::claim(*fx.conn, fx.k, claim_opts("w1"), batch));
    CHECK(outcomes_of(r, 3) ==
          std::vector<std::string>{"delivered 1", "delivered 1", "delivered 2"});
    CHECK(record_at(fx.k, "ann", first.id).key == "t:{bus:0}:c:5:0");
    CHECK(record_at(fx.k, "ben", second.id).key == "t:{bus:0}:c:5:0");
    CHECK(record_at(fx.k, "ann", next.id).key == "t:{bus:0}:c:5:1");
    auto fields = cmd({"HGETALL", "t:{bus:0}:c:5:0"});
    CO_LET(auto f, fx.conn->exec(std::move(fields)));
    CHECK(f.value.elements.size() == 4);  // two records, nothing else
    for (const char* bucket : {"t:{bus:0}:c:5:0", "t:{bus:0}:c:5:1"}) {
      auto pttl = cmd({"PTTL", bucket});
      CO_LET(auto t, fx.conn->exec(std::move(pttl)));
      CHECK(t.value.integer > 55000);
      CHECK(t.value.integer <= 60000);
    }
    // No key per record is left behind.
    auto exists = cmd({"EXISTS", fx.k.claim("ann", first.id)});
    CO_LET(auto k, fx.conn->exec(std::move(exists)));
    CHECK(k.value.integer == 0);
    // Every message is done for a second claimer, in one call.
    CO_LET(auto again, pushonce::test::claim(*fx.conn, fx.k, claim_opts("w2"), batch));
    CHECK(outcomes_of(again, 3) == std::vector<std::string>{"done 1", "done 1", "done 2"});
  });
}

TEST_CASE("claim: a call that fails half-way keeps the records of what it delivered") {
  redis_fixture fx;
  const auto a = bus_msg(std::to_string(1 * 4096 + 7), "amy");
  const auto b = bus_msg(std::to_string(2 * 4096 + 7), "bob");
  const auto c = bus_msg(std::to_string(3 * 4096 + 7), "cat");
  fx.run([&]() -> asio::awaitable<void> {
    // bob's meta hash is not a hash: the offset's HINCRBY fails inside the script, after
    // amy's message was delivered and before cat's.
    auto broken = cmd({"SET", fx.k.user("bob", "meta"), "broken"});
    CO_DO(fx.conn->exec(std::move(broken)));
    std::vector<bus_message> batch{a, b, c};
    CO_LET(auto r, pushonce::test::claim(*fx.conn, fx.k, claim_opts("w1"), batch));
    CHECK(r.value.is_error());
    CHECK(r.value.str.find("WRONGTYPE") != std::string::npos);
    // amy's delivery is recorded: a retry of the batch does not deliver it again.
    auto fixed = cmd({"DEL", fx.k.user("bob", "meta")});
    CO_DO(fx.conn->exec(std::move(fixed)));
    CO_LET(auto again, pushonce::test::claim(*fx.conn, fx.k, claim_opts("w2"), batch));
    CHECK(outcomes_of(again, 3) ==
          std::vector<std::string>{"done 1", "delivered 1", "delivered 1"});
    auto xlen = cmd({"XLEN", fx.k.user("amy", "inbox")});
    CO_LET(auto len, fx.conn->exec(std::move(xlen)));
    CHECK(len.value.integer == 1);
  });
}

TEST_CASE("claim: a record binds its id to one user and frame; an id reused is a new message") {
  redis_fixture fx;
  // A failover that rolled back a queue's sequence makes the next assignments reuse ids the
  // users' shards have records of. Same shard (one bus shard), same id, same bucket:
  const auto to_alice = bus_msg("4096", "alice", R"({"resource":"r1"})");
  const auto to_bob = bus_msg("4096", "bob", R"({"resource":"r1"})");
  const auto alice_again = bus_msg("4096", "alice", R"({"resource":"r2"})");
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto a, claim_one(*fx.conn, fx.k, claim_opts("w1"), to_alice));
    CHECK(outcome_of(a) == "delivered 1");
    // bob's message under alice's id is delivered, not answered with alice's record.
    CO_LET(auto b, claim_one(*fx.conn, fx.k, claim_opts("w1"), to_bob));
    CHECK(outcome_of(b) == "delivered 1");
    // alice's other frame under the same id too; each message once.
    CO_LET(auto a2, claim_one(*fx.conn, fx.k, claim_opts("w2"), alice_again));
    CHECK(outcome_of(a2) == "delivered 2");
    for (const auto& m : {to_alice, to_bob, alice_again}) {
      CO_LET(auto again, claim_one(*fx.conn, fx.k, claim_opts("w2"), m));
      CHECK(outcome_of(again) == (m.user == "bob"              ? "done 1"
                                  : m.tail == alice_again.tail ? "done 2"
                                                               : "done 1"));
    }
    // The same message published again later (another "ts", a replay) is the same record.
    auto later = to_bob;
    later.tail = to_bob.tail.substr(0, to_bob.tail.rfind(",\"ts\":")) + R"(,"ts":1})";
    later.ts = 1;
    CO_LET(auto l, claim_one(*fx.conn, fx.k, claim_opts("w3"), later));
    CHECK(outcome_of(l) == "done 1");
    auto xlen = cmd({"XLEN", fx.k.user("alice", "inbox")});
    CO_LET(auto len, fx.conn->exec(std::move(xlen)));
    CHECK(len.value.integer == 2);
  });
}

TEST_CASE("claim: a record under the bare id (a worker before bound records) is still read") {
  redis_fixture fx;
  const auto m = bus_msg("8192", "carl");
  fx.run([&]() -> asio::awaitable<void> {
    // What a worker of the earlier layout wrote: field "8192", delivered at offset 3.
    auto old = cmd({"HSET", record_at(fx.k, m).key, "8192", "3"});
    CO_DO(fx.conn->exec(std::move(old)));
    CO_LET(auto r, claim_one(*fx.conn, fx.k, claim_opts("w1"), m));
    CHECK(outcome_of(r) == "done 3");
    auto xlen = cmd({"XLEN", fx.k.user("carl", "inbox")});
    CO_LET(auto len, fx.conn->exec(std::move(xlen)));
    CHECK(len.value.integer == 0);
  });
}

}  // namespace test_claim_integration
