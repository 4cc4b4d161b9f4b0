// publish.lua through core/publisher: ids, idempotency keys scoped to the user, batches,
// the published counter, data spliced verbatim, shards, NOSCRIPT recovery.
#include "core/publisher.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/message.hpp"
#include "core/names.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_publish_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::publish_request;
using pushonce::publisher;
using pushonce::test::cmd;
using pushonce::test::co_let_lapse;
using pushonce::test::co_observe_quiet;
using pushonce::test::co_wait_until;
using pushonce::test::received;
using pushonce::test::redis_fixture;

namespace {

publish_request req(std::string user, std::string data,
                    std::optional<std::string> key = std::nullopt) {
  return publish_request{std::move(user), std::move(data), std::move(key)};
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

TEST_CASE("publish: ids, duplicates by idempotency key, per-user keys, the counter") {
  redis_fixture fx;
  received bus;
  auto sub = fx.subscriber(bus);
  pushonce::publisher_options po;
  po.retention.dedup_window = 60s;
  publisher pub(fx.conn, fx.k, po);
  const std::string bus_ch = fx.k.bus_channel();
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = bus_ch;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);

    CO_LET(auto p1, pub.publish(req("alice", R"({"a":1})")));
    REQUIRE(p1.has_value());
    CHECK(all_digits(p1.value().id));
    CHECK(p1.value().id == "4096");  // seq 1 x 4096 + shard 0
    CHECK_FALSE(p1.value().duplicate);

    CO_LET(auto p2, pub.publish(req("alice", R"({"a":2})", "order-1")));
    REQUIRE(p2.has_value());
    CHECK(p2.value().id == "8192");
    CHECK_FALSE(p2.value().duplicate);
    CHECK(pushonce::compare_ids(p1.value().id, p2.value().id) < 0);

    CO_LET(auto p3, pub.publish(req("alice", R"({"a":3})", "order-1")));
    REQUIRE(p3.has_value());
    CHECK(p3.value().id == p2.value().id);
    CHECK(p3.value().duplicate);

    // The key is scoped to the user: bob's "order-1" is another message.
    CO_LET(auto p4, pub.publish(req("bob", R"({"b":1})", "order-1")));
    REQUIRE(p4.has_value());
    CHECK_FALSE(p4.value().duplicate);
    CHECK(p4.value().id == "12288");
    CO_LET(auto p5, pub.publish(req("bob", R"({"b":2})", "order-1")));
    CHECK(p5.value().duplicate);
    CHECK(p5.value().id == "12288");

    auto pttl = cmd({"PTTL", fx.k.idem(0, "alice", "order-1")});
    CO_LET(auto t, fx.conn->exec(std::move(pttl)));
    CHECK(t.value.integer > 55000);
    CHECK(t.value.integer <= 60000);

    // Invalid requests never reach Redis.
    CO_LET(auto bad, pub.publish(req("not a name", "1")));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == pushonce::errc::bad_request);
    CO_LET(auto badkey, pub.publish(req("alice", "1", std::string(201, 'k'))));
    CHECK(badkey.error().code == pushonce::errc::bad_request);
    CO_LET(auto nodata, pub.publish(req("alice", "")));
    CHECK(nodata.error().code == pushonce::errc::bad_request);

    // Wait long enough that a duplicate would have been published if it were.
    CO_LET(bool three, co_wait_until([&] { return bus.count(bus_ch) >= 3; }, 2s));
    CHECK(three);
    CO_DO(co_observe_quiet(200ms, "a duplicate publish on the bus"));

    auto xlen = cmd({"XLEN", fx.k.bus(0, "outbox")});
    CO_LET(auto xl, fx.conn->exec(std::move(xlen)));
    CHECK(xl.value.integer == 3);
    auto stat = cmd({"HGET", fx.k.plain("stats"), "published"});
    CO_LET(auto st, fx.conn->exec(std::move(stat)));
    CHECK(st.value.str == "3");
  });
  auto msgs = bus.payloads(bus_ch);
  REQUIRE(msgs.size() == 3);
  std::vector<std::string> ids, users, data;
  for (auto& text : msgs) {
    // One message per publish call: one line per bus payload.
    REQUIRE(pushonce::split_bus_payload(text).size() == 1);
    auto m = pushonce::parse_bus_message(text);
    REQUIRE(m);
    CHECK(m->tail.rfind(R"(,"kind":"message","data":)", 0) == 0);
    CHECK(m->src == "bus:0");
    ids.push_back(m->id);
    users.push_back(m->user);
    data.push_back(boost::json::serialize(boost::json::parse(text).at("data")));
  }
  CHECK(ids == std::vector<std::string>{"4096", "8192", "12288"});
  CHECK(users == std::vector<std::string>{"alice", "alice", "bob"});
  CHECK(data == std::vector<std::string>{R"({"a":1})", R"({"a":2})", R"({"b":1})"});
}

TEST_CASE("publish: a batch where a key repeats; the counter counts only new messages") {
  redis_fixture fx;
  received bus;
  auto sub = fx.subscriber(bus);
  publisher pub(fx.conn, fx.k);
  const std::string bus_ch = fx.k.bus_channel();
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = bus_ch;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);
    std::vector<publish_request> batch{req("carol", "1", "k1"), req("carol", "2", "k2"),
                                       req("carol", "3", "k1"), req("bad name", "4"),
                                       req("dave", "5", "k1"),  req("carol", "6")};
    CO_LET(auto rs, pub.publish_batch(std::move(batch)));
    REQUIRE(rs.size() == 6);
    REQUIRE(rs[0].has_value());
    REQUIRE(rs[1].has_value());
    REQUIRE(rs[2].has_value());
    CHECK_FALSE(rs[0].value().duplicate);
    CHECK_FALSE(rs[1].value().duplicate);
    CHECK(rs[2].value().duplicate);
    CHECK(rs[2].value().id == rs[0].value().id);
    REQUIRE_FALSE(rs[3].has_value());
    CHECK(rs[3].error().code == pushonce::errc::bad_request);
    REQUIRE(rs[4].has_value());
    CHECK_FALSE(rs[4].value().duplicate);
    REQUIRE(rs[5].has_value());
    CHECK_FALSE(rs[5].value().duplicate);
    CHECK(rs[0].value().id == "4096");
    CHECK(rs[1].value().id == "8192");
    CHECK(rs[4].value().id == "12288");
    CHECK(rs[5].value().id == "16384");

    // The same batch again: every keyed message is a duplicate now.
    std::vector<publish_request> again{req("carol", "1", "k1"), req("carol", "2", "k2"),
                                       req("dave", "5", "k1")};
    CO_LET(auto rs2, pub.publish_batch(std::move(again)));
    REQUIRE(rs2.size() == 3);
    int dups = 0;
    for (auto& r : rs2) dups += r.has_value() && r.value().duplicate;
    CHECK(dups == 3);
    CHECK(rs2[0].value().id == "4096");
    CHECK(rs2[2].value().id == "12288");

    // The first batch is ONE bus payload (4 lines); the second, all duplicates, none.
    CO_LET(bool one, co_wait_until([&] { return bus.count(bus_ch) >= 1; }, 2s));
    CHECK(one);
    CO_DO(co_observe_quiet(200ms, "a bus payload for the duplicates"));
    auto stat = cmd({"HGET", fx.k.plain("stats"), "published"});
    CO_LET(auto st, fx.conn->exec(std::move(stat)));
    CHECK(st.value.str == "4");
    auto xlen = cmd({"XLEN", fx.k.bus(0, "outbox")});
    CO_LET(auto xl, fx.conn->exec(std::move(xlen)));
    CHECK(xl.value.integer == 1);
  });
  REQUIRE(bus.count(bus_ch) == 1);
  const auto payload = bus.payloads(bus_ch).front();
  auto lines = pushonce::split_bus_payload(payload);
  REQUIRE(lines.size() == 4);
  std::vector<std::string> ids;
  for (auto line : lines) {
    auto m = pushonce::parse_bus_message(line);
    REQUIRE(m);
    ids.push_back(m->id);
  }
  CHECK(ids == std::vector<std::string>{"4096", "8192", "12288", "16384"});
}

TEST_CASE("publish: data JSON is spliced verbatim into the bus message and the outbox") {
  redis_fixture fx;
  received bus;
  auto sub = fx.subscriber(bus);
  publisher pub(fx.conn, fx.k);
  const std::string data = R"({"a":[1,{}],"big":12345678901234567890,"s":"x\"y\u00e9"})";
  std::string outbox_m;
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = fx.k.bus_channel();
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);
    CO_LET(auto p, pub.publish(req("erin", data)));
    REQUIRE(p.has_value());
    CO_LET(bool got, co_wait_until([&] { return bus.count(fx.k.bus_channel()) == 1; }, 2s));
    CHECK(got);
    auto range = cmd({"XRANGE", fx.k.bus(0, "outbox"), "-", "+"});
    CO_LET(auto x, fx.conn->exec(std::move(range)));
    REQUIRE(x.value.elements.size() == 1);
    const auto& fields = x.value.elements[0].at(1).elements;
    REQUIRE(fields.size() == 2);  // only "m": the message lines
    CHECK(fields[0].str == "m");
    outbox_m = fields[1].str;
  });
  auto msgs = bus.payloads(fx.k.bus_channel());
  REQUIRE(msgs.size() == 1);
  const auto& text = msgs[0];
  CHECK(text.find(R"(,"data":)" + data + R"(,"ts":)") != std::string::npos);
  CHECK(text.rfind(R"({"id":"4096","user":"erin","src":"bus:0","kind":"message","data":)", 0) == 0);
  CHECK(text == outbox_m);
  auto m = pushonce::parse_bus_message(text);
  REQUIRE(m);
  CHECK(m->id == "4096");
}

TEST_CASE("publish: shards put a user's messages in its shard; ids stay unique") {
  redis_fixture fx;
  const pushonce::keys k4(fx.k.ns(), 4);
  publisher pub(fx.conn, k4);
  std::vector<std::string> users{"alice", "bob", "carol", "dave", "erin", "frank", "gina", "hal"};
  std::vector<std::string> ids;
  fx.run([&]() -> asio::awaitable<void> {
    for (int round = 0; round < 3; ++round) {
      std::vector<publish_request> batch;
      for (auto& u : users) batch.push_back(req(u, std::to_string(round)));
      CO_LET(auto rs, pub.publish_batch(std::move(batch)));
      REQUIRE(rs.size() == users.size());
      for (std::size_t i = 0; i < rs.size(); ++i) {
        REQUIRE(rs[i].has_value());
        const auto id = std::stoll(rs[i].value().id);
        CHECK(id % 4096 == pushonce::keys::shard_of(users[i], 4));
        ids.push_back(rs[i].value().id);
      }
    }
    // Every shard's outbox holds one entry per batch that had its users, and exactly its
    // users' messages, one per line, each with its src.
    for (unsigned shard = 0; shard < 4; ++shard) {
      long long expect = 0;
      for (auto& u : users) expect += pushonce::keys::shard_of(u, 4) == shard ? 3 : 0;
      auto range = cmd({"XRANGE", k4.bus(shard, "outbox"), "-", "+"});
      CO_LET(auto x, fx.conn->exec(std::move(range)));
      CHECK(x.value.elements.size() == (expect > 0 ? 3u : 0u));
      long long lines = 0;
      for (const auto& e : x.value.elements) {
        for (auto line : pushonce::split_bus_payload(e.at(1).at(1).str)) {
          ++lines;
          auto m = pushonce::parse_bus_message(line);
          REQUIRE(m);
          CHECK(pushonce::keys::shard_of(m->user, 4) == shard);
          CHECK(m->src == "bus:" + std::to_string(shard));
        }
      }
      CHECK(lines == expect);
    }
  });
  std::sort(ids.begin(), ids.end());
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  CHECK(ids.size() == 24);
}

TEST_CASE("publish: a batch after SCRIPT FLUSH loads the script and succeeds once") {
  redis_fixture fx;
  publisher pub(fx.conn, fx.k);
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto first, pub.publish(req("alice", "1", "a")));
    REQUIRE(first.has_value());
    auto flush = cmd({"SCRIPT", "FLUSH"});
    CO_LET(auto f, fx.conn->exec(std::move(flush)));
    CHECK(f.ok());
    std::vector<publish_request> batch{req("alice", "2", "b"), req("alice", "3", "a"),
                                       req("alice", "4", "b")};
    CO_LET(auto rs, pub.publish_batch(std::move(batch)));
    REQUIRE(rs.size() == 3);
    REQUIRE(rs[0].has_value());
    REQUIRE(rs[1].has_value());
    REQUIRE(rs[2].has_value());
    CHECK_FALSE(rs[0].value().duplicate);
    CHECK(rs[0].value().id == "8192");
    CHECK(rs[1].value().duplicate);
    CHECK(rs[1].value().id == first.value().id);
    CHECK(rs[2].value().duplicate);
    CHECK(rs[2].value().id == "8192");
    auto xlen = cmd({"XLEN", fx.k.bus(0, "outbox")});
    CO_LET(auto xl, fx.conn->exec(std::move(xlen)));
    CHECK(xl.value.integer == 2);
    auto stat = cmd({"HGET", fx.k.plain("stats"), "published"});
    CO_LET(auto st, fx.conn->exec(std::move(stat)));
    CHECK(st.value.str == "2");
  });
}

TEST_CASE(
    "publish_checked: one round trip takes the token, publishes and counts; several "
    "shards ask the bucket first; a refused request publishes nothing") {
  redis_fixture fx;
  const pushonce::lua::publish_rate rate{fx.k.plain("ratelimit:api:test"), 1, 2};
  auto counter = [&]() -> asio::awaitable<long long> {
    auto stat = cmd({"HGET", fx.k.plain("stats"), "published"});
    auto st = co_await fx.conn->exec(std::move(stat));
    co_return st.value.as_int().value_or(0);
  };
  auto calls = [&](std::string what) -> asio::awaitable<long long> {
    auto info = cmd({"INFO", "commandstats"});
    auto r = co_await fx.conn->exec(std::move(info));
    auto at = r.value.str.find("cmdstat_" + what + ":calls=");
    if (at == std::string::npos) co_return 0;
    co_return std::stoll(r.value.str.substr(at + what.size() + 15));
  };
  fx.run([&]() -> asio::awaitable<void> {
    publisher one(fx.conn, fx.k);
    std::vector<publish_request> warm{req("warm", "0")};  // loads publish.lua (NOSCRIPT once)
    CO_LET(auto w, one.publish_checked(std::move(warm), std::nullopt));
    CHECK_FALSE(w.limited);
    CO_LET(auto evalshas, calls("evalsha"));
    for (int i = 0; i < 2; ++i) {
      std::vector<publish_request> batch{req("alice", "1"), req("bob", "2")};
      CO_LET(auto a, one.publish_checked(std::move(batch), rate));
      CHECK_FALSE(a.limited);
      REQUIRE(a.results.size() == 2);
      CHECK(a.results[0].has_value());
      CHECK(a.results[1].has_value());
    }
    // One EVALSHA per request: publish.lua takes the token (rate_limit.lua would be a
    // second). Commands a script calls count too: HINCRBY once per request, inside it.
    CO_LET(auto evalshas_after, calls("evalsha"));
    CO_LET(auto hincrbys, calls("hincrby"));  // 1 for the warm-up
    CO_LET(auto counted, counter());
    CHECK(evalshas_after - evalshas == 2);
    CHECK(hincrbys == 3);
    CHECK(counted == 5);
    std::vector<publish_request> third{req("alice", "3")};
    CO_LET(auto refused, one.publish_checked(std::move(third), rate));
    REQUIRE(refused.limited);
    CHECK(refused.limited->count() > 0);
    CHECK(refused.limited->count() <= 1000);
    CHECK(refused.results.empty());
    auto xlen = cmd({"XLEN", fx.k.bus(0, "outbox")});
    CO_LET(auto xl, fx.conn->exec(xlen));
    CHECK(xl.value.integer == 3);
    CO_LET(auto c1, counter());
    CHECK(c1 == 5);

    // Without a limit nothing is refused, and the counter still counts.
    std::vector<publish_request> free{req("alice", "4")};
    CO_LET(auto f, one.publish_checked(std::move(free), std::nullopt));
    CHECK_FALSE(f.limited);
    CO_LET(auto c2, counter());
    CHECK(c2 == 6);

    // Users of several shards: the bucket (now empty) is asked before anything is sent.
    publisher four(fx.conn, pushonce::keys(fx.k.ns(), 4));
    std::vector<publish_request> spread;
    for (const char* u : {"alice", "bob", "carol", "dave", "erin", "frank"})
      spread.push_back(req(u, "5"));
    CO_LET(auto s, four.publish_checked(std::move(spread), rate));
    CHECK(s.limited);
    CHECK(s.results.empty());
    CO_LET(auto c3, counter());
    CHECK(c3 == 6);
    REQUIRE(s.limited);
    CO_DO(co_let_lapse(*s.limited + 20ms, "the bucket's next token, as the refusal said"));
    std::vector<publish_request> later;
    for (const char* u : {"alice", "bob", "carol", "dave", "erin", "frank"})
      later.push_back(req(u, "6"));
    CO_LET(auto s2, four.publish_checked(std::move(later), rate));
    CHECK_FALSE(s2.limited);
    for (auto& r : s2.results) CHECK(r.has_value());
    CO_LET(auto c4, counter());
    CHECK(c4 == 12);
  });
}

}  // namespace test_publish_integration
