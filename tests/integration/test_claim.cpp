// claim.lua and deliver.lua through the core's script runner (redis::get_script/eval):
// won/taken/done, many concurrent claimers with exactly one winner, lease expiry and
// re-claim, the deliver fence, inbox offsets and the user channel.
#include "core/redis/scripts.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "core/message.hpp"
#include "tests/integration/lua_calls.hpp"
#include "tests/integration/redis_fixture.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::redis::result;
using pushonce::test::async_latch;
using pushonce::test::cmd;
using pushonce::test::deliver_args;
using pushonce::test::received;
using pushonce::test::redis_fixture;
using pushonce::test::sleep_for;
using pushonce::test::wait_until;

namespace {

// {"won", n} / {"taken", 0} / {"done", offset} as "won 1".
std::string outcome_of(const result& r) {
  if (r.ec) return "transport error: " + r.ec.message();
  if (r.value.is_error()) return "error: " + r.value.str;
  if (!r.value.is_array() || r.value.elements.size() != 2) return "unexpected reply";
  return r.value.at(0).str + " " + std::to_string(r.value.at(1).integer);
}

deliver_args frame_for(const std::string& id, const std::string& user) {
  pushonce::bus_message m;
  m.id = id;
  m.user = user;
  m.kind = "message";
  m.data_json = R"({"n":)" + id + "}";
  m.ts = 1700000000000;
  m.src = "bus:0";
  auto parts = pushonce::render_frame(m);
  deliver_args d;
  d.head = parts.head;
  d.tail = parts.tail;
  return d;
}

}  // namespace

TEST_CASE("claim: won, taken (also for the owner), done after delivery") {
  redis_fixture fx;
  const std::string user = "alice", id = "4096";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto w1, pushonce::test::claim(*fx.conn, fx.k, user, id, "w1", 5000));
    CHECK(outcome_of(w1) == "won 1");
    CHECK(w1.value.at(0).kind == pushonce::redis::reply::type::string);
    CHECK(w1.value.at(1).kind == pushonce::redis::reply::type::integer);
    CO_LET(auto w2, pushonce::test::claim(*fx.conn, fx.k, user, id, "w2", 5000));
    CHECK(outcome_of(w2) == "taken 0");
    CO_LET(auto w1b, pushonce::test::claim(*fx.conn, fx.k, user, id, "w1", 5000));
    CHECK(outcome_of(w1b) == "taken 0");

    auto state = cmd({"HMGET", fx.k.claim(user, id), "state", "owner", "attempts"});
    CO_LET(auto st, fx.conn->exec(state));
    CHECK(st.value.at(0).str == "leased");
    CHECK(st.value.at(1).str == "w1");
    CHECK(st.value.at(2).str == "1");
    auto pttl = cmd({"PTTL", fx.k.claim(user, id)});
    CO_LET(auto t, fx.conn->exec(pttl));
    CHECK(t.value.integer > 55000);
    CHECK(t.value.integer <= 60000);

    CO_LET(auto d, pushonce::test::deliver(*fx.conn, fx.k, user, id, "w1", frame_for(id, user)));
    REQUIRE(d.ok());
    CHECK(d.value.integer == 1);
    CO_LET(auto w3, pushonce::test::claim(*fx.conn, fx.k, user, id, "w3", 5000));
    CHECK(outcome_of(w3) == "done 1");
    CO_LET(auto w1c, pushonce::test::claim(*fx.conn, fx.k, user, id, "w1", 5000));
    CHECK(outcome_of(w1c) == "done 1");

    // A bad lease is a programming error: bad_request, nothing stored.
    CO_LET(auto bad, pushonce::test::claim(*fx.conn, fx.k, user, "1", "w1", 0));
    CHECK(bad.value.is_error());
    CHECK(bad.value.error_code() == "bad_request");
    auto exists = cmd({"EXISTS", fx.k.claim(user, "1")});
    CO_LET(auto ex, fx.conn->exec(exists));
    CHECK(ex.value.integer == 0);
  });
}

TEST_CASE("claim: 64 concurrent claimers on 8 connections, exactly one winner, 1000 times") {
  redis_fixture fx;
  constexpr int connections = 8, claimers = 64, rounds = 1000;
  std::vector<std::shared_ptr<pushonce::redis::connection>> conns;
  for (int i = 0; i < connections; ++i) conns.push_back(fx.connect());

  int rounds_with_one_winner = 0, rounds_with_63_taken = 0, owner_matches = 0;
  int transport_errors = 0, other_replies = 0;
  fx.run([&]() -> asio::awaitable<void> {
    // Load the script once, so the rounds measure the race and not the NOSCRIPT path.
    CO_LET(auto warm, pushonce::test::claim(*fx.conn, fx.k, "bob", "0", "warm", 1000));
    REQUIRE(warm.ok());
    auto ex = co_await asio::this_coro::executor;
    for (int round = 0; round < rounds; ++round) {
      const std::string id = std::to_string((round + 1) * 4096);
      async_latch done(ex, claimers);
      std::vector<std::string> winners;
      int taken = 0;
      for (int c = 0; c < claimers; ++c) {
        auto conn = conns[c % connections];
        std::string owner = "w" + std::to_string(c);
        asio::co_spawn(
            ex,
            [&, conn, owner, id]() -> asio::awaitable<void> {
              CO_LET(auto r, pushonce::test::claim(*conn, fx.k, "bob", id, owner, 30000));
              auto o = outcome_of(r);
              if (o == "won 1")
                winners.push_back(owner);
              else if (o == "taken 0")
                ++taken;
              else if (r.ec)
                ++transport_errors;
              else
                ++other_replies;
              done.count_down();
            },
            asio::detached);
      }
      CO_DO(done.wait());
      rounds_with_one_winner += winners.size() == 1;
      rounds_with_63_taken += taken == claimers - 1;
      if (winners.size() == 1) {
        auto owner = cmd({"HGET", fx.k.claim("bob", id), "owner"});
        CO_LET(auto o, fx.conn->exec(std::move(owner)));
        owner_matches += o.value.str == winners.front();
      }
    }
  });
  CHECK(transport_errors == 0);
  CHECK(other_replies == 0);
  CHECK(rounds_with_one_winner == rounds);
  CHECK(rounds_with_63_taken == rounds);
  CHECK(owner_matches == rounds);
}

TEST_CASE("claim/deliver: lease expiry, re-claim, the fence, offsets, inbox and channel") {
  redis_fixture fx;
  received frames;
  auto sub = fx.subscriber(frames);
  const std::string user = "carol", id1 = "4096", id2 = "8192";
  const std::string channel = fx.k.user_channel(user);
  CHECK(channel == "t:{u:carol}:ch");
  const auto f1 = frame_for(id1, user);
  const auto f2 = frame_for(id2, user);
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = channel;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);

    CO_LET(auto never, pushonce::test::deliver(*fx.conn, fx.k, user, id1, "w1", f1));
    CHECK(never.value.error_code() == "fenced");

    CO_LET(auto w1, pushonce::test::claim(*fx.conn, fx.k, user, id1, "w1", 50));
    CHECK(outcome_of(w1) == "won 1");
    CO_DO(sleep_for(80ms));

    // The lease lapsed: its former owner may not deliver, and nothing is written.
    CO_LET(auto late, pushonce::test::deliver(*fx.conn, fx.k, user, id1, "w1", f1));
    REQUIRE(late.value.is_error());
    CHECK(late.value.error_code() == "fenced");
    auto exists = cmd({"EXISTS", fx.k.user(user, "meta"), fx.k.user(user, "inbox")});
    CO_LET(auto e1, fx.conn->exec(exists));
    CHECK(e1.value.integer == 0);

    CO_LET(auto w2, pushonce::test::claim(*fx.conn, fx.k, user, id1, "w2", 5000));
    CHECK(outcome_of(w2) == "won 2");
    CO_LET(auto stale, pushonce::test::deliver(*fx.conn, fx.k, user, id1, "w1", f1));
    CHECK(stale.value.error_code() == "fenced");
    CO_LET(auto stranger, pushonce::test::deliver(*fx.conn, fx.k, user, id1, "w9", f1));
    CHECK(stranger.value.error_code() == "fenced");
    CO_LET(auto e2, fx.conn->exec(exists));
    CHECK(e2.value.integer == 0);

    CO_LET(auto d1, pushonce::test::deliver(*fx.conn, fx.k, user, id1, "w2", f1));
    REQUIRE(d1.ok());
    CHECK(d1.value.kind == pushonce::redis::reply::type::integer);
    CHECK(d1.value.integer == 1);
    CO_LET(auto twice, pushonce::test::deliver(*fx.conn, fx.k, user, id1, "w2", f1));
    CHECK(twice.value.error_code() == "fenced");
    CO_LET(auto done, pushonce::test::claim(*fx.conn, fx.k, user, id1, "w3", 5000));
    CHECK(outcome_of(done) == "done 1");

    auto state =
        cmd({"HMGET", fx.k.claim(user, id1), "state", "owner", "attempts", "offset", "until"});
    CO_LET(auto st, fx.conn->exec(state));
    CHECK(st.value.at(0).str == "delivered");
    CHECK(st.value.at(1).str == "w2");
    CHECK(st.value.at(2).str == "2");
    CHECK(st.value.at(3).str == "1");
    CHECK(st.value.at(4).is_nil());

    CO_LET(auto w4, pushonce::test::claim(*fx.conn, fx.k, user, id2, "w4", 5000));
    CHECK(outcome_of(w4) == "won 1");
    CO_LET(auto d2, pushonce::test::deliver(*fx.conn, fx.k, user, id2, "w4", f2));
    REQUIRE(d2.ok());
    CHECK(d2.value.integer == 2);

    auto range = cmd({"XRANGE", fx.k.user(user, "inbox"), "-", "+"});
    CO_LET(auto inbox, fx.conn->exec(range));
    REQUIRE(inbox.value.elements.size() == 2);
    const auto& e1st = inbox.value.elements[0];
    CHECK(e1st.at(0).str == "1-0");
    REQUIRE(e1st.at(1).elements.size() == 2);
    CHECK(e1st.at(1).at(0).str == "f");
    CHECK(e1st.at(1).at(1).str == f1.head + "1" + f1.tail);
    const auto& e2nd = inbox.value.elements[1];
    CHECK(e2nd.at(0).str == "2-0");
    CHECK(e2nd.at(1).at(1).str == f2.head + "2" + f2.tail);

    auto meta = cmd({"HMGET", fx.k.user(user, "meta"), "epoch", "offset"});
    CO_LET(auto m, fx.conn->exec(meta));
    CHECK(m.value.at(0).str == "E1");
    CHECK(m.value.at(1).str == "2");

    CO_LET(bool got, wait_until([&] { return frames.count(channel) >= 2; }, 2s));
    CHECK(got);
  });
  auto p = frames.payloads(channel);
  REQUIRE(p.size() == 2);
  CHECK(p[0] == f1.head + "1" + f1.tail);
  CHECK(p[1] == f2.head + "2" + f2.tail);
  CHECK(
      p[0] ==
      R"({"type":"message","id":"4096","offset":1,"kind":"message","data":{"n":4096},"ts":1700000000000})");
}

TEST_CASE("claim: a released lease (worker shutdown) is claimable at once; a dead one never") {
  redis_fixture fx;
  const std::string user = "bob", id = "8192";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto w1, pushonce::test::claim(*fx.conn, fx.k, user, id, "w1", 60000));
    CHECK(outcome_of(w1) == "won 1");
    std::vector<std::string> ks{fx.k.claim(user, id)};
    std::vector<std::string> not_owner{"w2"};
    CO_LET(auto r0, pushonce::test::run_script(*fx.conn, "release", ks, not_owner));
    CHECK(r0.value.integer == 0);  // only the owner hands a lease back
    CO_LET(auto w2, pushonce::test::claim(*fx.conn, fx.k, user, id, "w2", 60000));
    CHECK(outcome_of(w2) == "taken 0");
    std::vector<std::string> owner{"w1"};
    CO_LET(auto r1, pushonce::test::run_script(*fx.conn, "release", ks, owner));
    CHECK(r1.value.integer == 1);
    CO_LET(auto w2b, pushonce::test::claim(*fx.conn, fx.k, user, id, "w2", 60000));
    CHECK(outcome_of(w2b) == "won 2");  // without waiting for the 60 s lease
    // The old owner cannot deliver any more: the fence holds.
    CO_LET(auto d, pushonce::test::deliver(*fx.conn, fx.k, user, id, "w1", frame_for(id, user)));
    CHECK(d.value.error_code() == "fenced");
    // dead_letter.lua by the lease holder: the message is never claimed again.
    std::vector<std::string> dl{"w2", "poison", "60000"};
    CO_LET(auto dead, pushonce::test::run_script(*fx.conn, "dead_letter", ks, dl));
    CHECK(dead.value.integer == 1);
    CO_LET(auto w3, pushonce::test::claim(*fx.conn, fx.k, user, id, "w3", 60000));
    CHECK(outcome_of(w3) == "dead 0");
  });
}
