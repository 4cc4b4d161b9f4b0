// The queue scripts (join, leave, resource_add/release/remove, assign, source) through
// core/queue_api against a real redis-server.
#include "core/queue_api.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "core/message.hpp"
#include "core/names.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_queue_scripts_integration {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::queue_api;
using pushonce::test::cmd;
using pushonce::test::co_wait_until;
using pushonce::test::received;
using pushonce::test::redis_fixture;

namespace {

bool decimal_id(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

TEST_CASE(
    "queue: join (registered queues only), already_queued, position, leave, not_queued, list "
    "order") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  received wakes;
  auto sub = fx.subscriber(wakes);
  const std::string q = "default";
  const std::string wake = fx.k.wake_channel();
  CHECK(wake == "t:leader:wake");
  fx.run([&]() -> asio::awaitable<void> {
    // A queue no leader has registered cannot be joined, and the refusal writes nothing.
    pushonce::redis::command keys_cmd{"KEYS", "*"};
    CO_LET(auto before, fx.conn->exec(keys_cmd));
    CO_LET(auto unknown, api.join(q, "alice"));
    REQUIRE_FALSE(unknown.has_value());
    CHECK(unknown.error().code == pushonce::errc::not_found);
    CO_LET(auto after, fx.conn->exec(keys_cmd));
    CHECK(after.value.elements.size() == before.value.elements.size());

    std::vector<std::string> queues{q, "other"};
    CO_LET(auto reg, api.register_queues(std::move(queues)));
    REQUIRE(reg.has_value());
    std::vector<std::string> bad_queues{"a{b}"};
    CO_LET(auto bad_reg, api.register_queues(std::move(bad_queues)));
    CHECK(bad_reg.error().code == pushonce::errc::bad_request);
    std::string ch = wake;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);

    CO_LET(auto a, api.join(q, "alice"));
    REQUIRE(a.has_value());
    CHECK(a.value().position == 1);
    CHECK(a.value().ticket == 1);
    CO_LET(auto b, api.join(q, "bob"));
    REQUIRE(b.has_value());
    CHECK(b.value().position == 2);
    CHECK(b.value().ticket == 2);

    CO_LET(auto again, api.join(q, "alice"));
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().code == pushonce::errc::already_queued);

    CO_LET(auto pb, api.position(q, "bob"));
    REQUIRE(pb.has_value());
    CHECK(pb.value() == 2);

    CO_LET(auto l1, api.leave(q, "alice"));
    CHECK(l1.has_value());
    CO_LET(auto l2, api.leave(q, "alice"));
    REQUIRE_FALSE(l2.has_value());
    CHECK(l2.error().code == pushonce::errc::not_queued);
    CO_LET(auto pa, api.position(q, "alice"));
    REQUIRE_FALSE(pa.has_value());
    CHECK(pa.error().code == pushonce::errc::not_queued);
    CO_LET(auto pb2, api.position(q, "bob"));
    CHECK(pb2.value() == 1);

    // Rejoining goes to the tail with a fresh ticket.
    CO_LET(auto c, api.join(q, "carol"));
    CHECK(c.value().position == 2);
    CHECK(c.value().ticket == 3);
    CO_LET(auto a2, api.join(q, "alice"));
    CHECK(a2.value().position == 3);
    CHECK(a2.value().ticket == 4);

    CO_LET(auto list, api.list(q, 100));
    REQUIRE(list.has_value());
    CHECK(list.value().length == 3);
    CHECK(list.value().users == std::vector<std::string>{"bob", "carol", "alice"});
    CO_LET(auto head, api.list(q, 2));
    CHECK(head.value().length == 3);
    CHECK(head.value().users == std::vector<std::string>{"bob", "carol"});
    CO_LET(auto page2, api.list(q, 2, 2));  // the next page
    CHECK(page2.value().length == 3);
    CHECK(page2.value().users == std::vector<std::string>{"alice"});

    // Queues are independent.
    CO_LET(auto other, api.join("other", "alice"));
    CHECK(other.value().position == 1);
    CHECK(other.value().ticket == 1);

    // Names are checked before Redis is asked.
    CO_LET(auto bad, api.join(q, "bad name"));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == pushonce::errc::bad_request);
    CO_LET(auto badq, api.join("a{b}", "alice"));
    CHECK(badq.error().code == pushonce::errc::bad_request);

    // Queue events: 4 joins + 1 leave on "default" + 1 join on "other", numbered per queue,
    // with the ticket each concerns; refusals publish nothing.
    CO_LET(bool got, co_wait_until([&] { return wakes.count(wake) >= 6; }, 2s));
    CHECK(got);
    CO_DO(pushonce::test::co_observe_quiet(100ms, "a wake for a refusal"));
    CHECK(wakes.payloads(wake) == std::vector<std::string>{"default 1 j 1", "default 2 j 2",
                                                           "default 3 r 1", "default 4 j 3",
                                                           "default 5 j 4", "other 1 j 1"});
    CHECK(c.value().seq == 4);
  });
}

TEST_CASE("queue: resources add (meta stored, exists adds nothing), release, remove") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  const std::string meta = R"({"gpu":1,"tags":[],"big":12345678901234567890})";
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{q};
    CO_LET(auto reg, api.register_queues(std::move(queues)));
    REQUIRE(reg.has_value());
    std::vector<std::string> ids{"r1", "r2"};
    CO_LET(auto add, api.add_resources(q, ids, meta));
    REQUIRE(add.has_value());
    CHECK(add.value() == ids);

    auto get_meta = cmd({"HGET", fx.k.queue(q, "res:meta"), "r1"});
    CO_LET(auto m1, fx.conn->exec(std::move(get_meta)));
    CHECK(m1.value.str == meta);

    std::vector<std::string> ids2{"r3", "r2"};
    CO_LET(auto dup, api.add_resources(q, ids2, ""));
    REQUIRE_FALSE(dup.has_value());
    CHECK(dup.error().code == pushonce::errc::exists);
    CHECK(dup.error().message == "r2");
    auto has_r3 = cmd({"HEXISTS", fx.k.queue(q, "res:meta"), "r3"});
    CO_LET(auto h3, fx.conn->exec(std::move(has_r3)));
    CHECK(h3.value.integer == 0);

    std::vector<std::string> twice{"r4", "r4"};
    CO_LET(auto tw, api.add_resources(q, twice, ""));
    CHECK(tw.error().code == pushonce::errc::exists);

    std::vector<std::string> ids3{"r3"};
    CO_LET(auto add3, api.add_resources(q, ids3, ""));
    CHECK(add3.has_value());
    auto get_meta3 = cmd({"HGET", fx.k.queue(q, "res:meta"), "r3"});
    CO_LET(auto m3, fx.conn->exec(std::move(get_meta3)));
    CHECK(m3.value.str == "null");

    auto free_set = cmd({"ZRANGE", fx.k.queue(q, "res:free"), "0", "-1"});
    CO_LET(auto fr, fx.conn->exec(free_set));
    REQUIRE(fr.value.elements.size() == 3);
    CHECK(fr.value.elements[0].str == "r1");
    CHECK(fr.value.elements[1].str == "r2");
    CHECK(fr.value.elements[2].str == "r3");

    CO_LET(auto list, api.list_resources(q));
    REQUIRE(list.has_value());
    REQUIRE(list.value().size() == 3);
    CHECK(list.value()[0].id == "r1");
    CHECK(list.value()[0].meta_json == meta);
    CHECK_FALSE(list.value()[0].assigned);
    CHECK(list.value()[2].meta_json == "null");

    CO_LET(auto nf, api.release_resource(q, "nope"));
    REQUIRE_FALSE(nf.has_value());
    CHECK(nf.error().code == pushonce::errc::not_found);
    CO_LET(auto na, api.release_resource(q, "r1"));
    REQUIRE_FALSE(na.has_value());
    CHECK(na.error().code == pushonce::errc::not_assigned);

    // Assign r1 to alice, release it: free again at the tail, alice may rejoin.
    CO_LET(auto src, api.source_index(q));
    REQUIRE(src.has_value());
    CHECK(src.value() == 16);
    CO_LET(auto j, api.join(q, "alice"));
    CHECK(j.has_value());
    CO_LET(auto as, api.assign_one(q, src.value(), 0, 0));
    REQUIRE(as.has_value());
    REQUIRE(as.value().has_value());
    CHECK(as.value()->user == "alice");
    CHECK(as.value()->resource == "r1");
    CO_LET(auto counts, api.resource_counts(q));
    CHECK(counts.value() == std::pair<long long, long long>{2, 1});
    CO_LET(auto list2, api.list_resources(q));
    CHECK(list2.value()[0].assigned);
    CHECK(list2.value()[0].user == "alice");

    CO_LET(auto rel, api.release_resource(q, "r1"));
    CHECK(rel.has_value());
    CO_LET(auto fr2, fx.conn->exec(free_set));
    REQUIRE(fr2.value.elements.size() == 3);
    CHECK(fr2.value.elements[2].str == "r1");
    auto alice_assigned = cmd({"HEXISTS", fx.k.queue(q, "assigned"), "alice"});
    CO_LET(auto aa, fx.conn->exec(alice_assigned));
    CHECK(aa.value.integer == 0);
    CO_LET(auto again, api.release_resource(q, "r1"));
    CHECK(again.error().code == pushonce::errc::not_assigned);

    // Remove: a free one, then a held one (its holder loses the assignment), then unknown.
    CO_LET(auto rm3, api.remove_resource(q, "r3"));
    CHECK(rm3.has_value());
    CO_LET(auto j2, api.join(q, "alice"));
    CHECK(j2.has_value());
    CO_LET(auto as2, api.assign_one(q, src.value(), 0, 0));
    REQUIRE(as2.value().has_value());
    CHECK(as2.value()->resource == "r2");
    CO_LET(auto rm2, api.remove_resource(q, "r2"));
    CHECK(rm2.has_value());
    CO_LET(auto aa2, fx.conn->exec(alice_assigned));
    CHECK(aa2.value.integer == 0);
    CO_LET(auto rm2b, api.remove_resource(q, "r2"));
    REQUIRE_FALSE(rm2b.has_value());
    CHECK(rm2b.error().code == pushonce::errc::not_found);
    CO_LET(auto list3, api.list_resources(q));
    REQUIRE(list3.value().size() == 1);
    CHECK(list3.value()[0].id == "r1");
    CO_LET(auto fr3, fx.conn->exec(free_set));
    REQUIRE(fr3.value.elements.size() == 1);
    CHECK(fr3.value.elements[0].str == "r1");
  });
}

TEST_CASE("queue: assign_one is FIFO, one resource per user, publishes the bus message") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  received bus;
  auto sub = fx.subscriber(bus);
  const std::string q = "default";
  const std::string meta = R"({"gpu":1,"tags":["a"]})";
  std::vector<pushonce::assignment> got;
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{q};
    CO_LET(auto reg, api.register_queues(std::move(queues)));
    REQUIRE(reg.has_value());
    std::string ch = fx.k.bus_channel();
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);
    CO_LET(auto src, api.source_index(q));
    REQUIRE(src.has_value());
    const long long source = src.value();
    CHECK(source == 16);
    CO_LET(auto src_again, api.source_index(q));
    CHECK(src_again.value() == 16);
    CO_LET(auto src_other, api.source_index("other"));
    CHECK(src_other.value() == 17);

    // Nothing waits, nothing free.
    CO_LET(auto none0, api.assign_one(q, source, 0, 0));
    REQUIRE(none0.has_value());
    CHECK_FALSE(none0.value().has_value());

    for (const char* u : {"u1", "u2", "u3"}) {
      CO_LET(auto j, api.join(q, u));
      CHECK(j.has_value());
    }
    // Users wait, nothing free.
    CO_LET(auto none1, api.assign_one(q, source, 0, 0));
    CHECK_FALSE(none1.value().has_value());

    std::vector<std::string> ids{"r1", "r2"};
    CO_LET(auto add, api.add_resources(q, ids, meta));
    CHECK(add.has_value());

    CO_LET(auto a1, api.assign_one(q, source, 0, 30000));
    CO_LET(auto a2, api.assign_one(q, source, 0, 0));
    CO_LET(auto a3, api.assign_one(q, source, 0, 0));  // u3 waits, nothing free
    REQUIRE(a1.has_value());
    REQUIRE(a2.has_value());
    REQUIRE(a3.has_value());
    REQUIRE(a1.value().has_value());
    REQUIRE(a2.value().has_value());
    CHECK_FALSE(a3.value().has_value());
    got.push_back(*a1.value());
    got.push_back(*a2.value());
    CHECK(got[0].user == "u1");
    CHECK(got[0].resource == "r1");
    CHECK(std::stoll(got[0].id) % 4096 == 16);
    CHECK(got[1].user == "u2");
    CHECK(got[1].resource == "r2");
    CHECK(std::stoll(got[1].id) % 4096 == 16);
    CHECK(pushonce::compare_ids(got[0].id, got[1].id) < 0);

    // An assigned user cannot join; the holder hashes agree.
    CO_LET(auto ja, api.join(q, "u1"));
    REQUIRE_FALSE(ja.has_value());
    CHECK(ja.error().code == pushonce::errc::already_assigned);
    auto holders = cmd({"HGETALL", fx.k.queue(q, "res:holder")});
    CO_LET(auto h, fx.conn->exec(std::move(holders)));
    CHECK(h.value.elements.size() == 4);
    auto assigned = cmd({"HMGET", fx.k.queue(q, "assigned"), "u1", "u2", "u3"});
    CO_LET(auto as, fx.conn->exec(std::move(assigned)));
    CHECK(as.value.at(0).str == "r1");
    CHECK(as.value.at(1).str == "r2");
    CHECK(as.value.at(2).is_nil());

    // Release r1: it goes to u3 (the next in line), never to u1/u2 again.
    CO_LET(auto rel, api.release_resource(q, "r1"));
    CHECK(rel.has_value());
    CO_LET(auto a4, api.assign_one(q, source, 0, 0));
    REQUIRE(a4.value().has_value());
    got.push_back(*a4.value());
    CHECK(got[2].user == "u3");
    CHECK(got[2].resource == "r1");
    CHECK(pushonce::compare_ids(got[1].id, got[2].id) < 0);
    CHECK(std::stoll(got[2].id) % 4096 == 16);
    CO_LET(auto a5, api.assign_one(q, source, 0, 0));
    CHECK_FALSE(a5.value().has_value());

    // Three assignments and the release's `expired` message to u1 (reason "released").
    auto xlen = cmd({"XLEN", fx.k.queue(q, "outbox")});
    CO_LET(auto xl, fx.conn->exec(std::move(xlen)));
    CHECK(xl.value.integer == 4);

    CO_LET(bool all, co_wait_until([&] { return bus.count(fx.k.bus_channel()) >= 4; }, 2s));
    CHECK(all);
  });

  auto payloads = bus.payloads(fx.k.bus_channel());
  REQUIRE(payloads.size() == 4);
  CHECK(payloads[2].find(R"("user":"u1","src":"q:default","kind":"expired")") != std::string::npos);
  CHECK(payloads[2].find(R"("reason":"released")") != std::string::npos);
  payloads.erase(payloads.begin() + 2);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(payloads[i]);
    std::string why;
    auto m = pushonce::parse_bus_message(payloads[i], &why);
    REQUIRE_MESSAGE(m, why);
    CHECK(m->id == got[i].id);
    CHECK(m->user == got[i].user);
    CHECK(m->src == "q:default");
    // The scripts' own layout: the worker reads it without a JSON parse.
    CHECK(payloads[i].rfind(R"({"id":")" + got[i].id + R"(","user":")" + got[i].user +
                                R"(","src":"q:default","kind":"assignment","data":)",
                            0) == 0);
    CHECK(m->tail.rfind(R"(,"kind":"assignment","data":)", 0) == 0);
    auto whole = json::parse(payloads[i]).as_object();
    const auto ts = whole.at("ts").as_int64();
    CHECK(ts > 1600000000000);
    auto data = whole.at("data").as_object();
    CHECK(data.at("queue").as_string() == "default");
    CHECK(data.at("resource").as_string() == got[i].resource.c_str());
    CHECK(data.at("meta") == json::parse(meta));
    if (i == 0) {
      REQUIRE(data.at("accept_by").is_int64());
      CHECK(data.at("accept_by").as_int64() - ts == 30000);
    } else {
      CHECK(data.at("accept_by").is_null());
    }
    // The meta JSON is spliced verbatim into the text.
    CHECK(payloads[i].find(R"("meta":)" + meta) != std::string::npos);
  }
}

TEST_CASE("queue: a source index a failover lost goes back to its queue, never to two") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const auto sources = fx.k.plain("sources");
  // The hash loses what was written since it held only `next` 15 (a failover's rollback).
  auto roll_back = [&]() -> asio::awaitable<void> {
    auto del = cmd({"DEL", sources});
    CO_DO(fx.conn->exec(std::move(del)));
  };
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(auto a, api.source_index("a"));
    CHECK(a.value() == 16);
    CO_DO(roll_back());
    // a's leader comes first: 16 is a's again, and the next queue gets 17.
    CO_LET(auto a_again, api.source_index("a", 16));
    CHECK(a_again.value() == 16);
    CO_LET(auto b, api.source_index("b"));
    CHECK(b.value() == 17);
    CO_DO(roll_back());
    // Another queue comes first and takes 16: a's leader gets a new index, not a shared one.
    CO_LET(auto c, api.source_index("c"));
    CHECK(c.value() == 16);
    CO_LET(auto a_moved, api.source_index("a", 16));
    CHECK(a_moved.value() == 17);
    CO_LET(auto c_again, api.source_index("c"));
    CHECK(c_again.value() == 16);
    // A bad index is refused, nothing written.
    CO_LET(auto bad, api.source_index("d", 3));
    CHECK_FALSE(bad.has_value());
  });
}

TEST_CASE("queue: ids grow as numbers, never below the clock, never again after a rollback") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  std::vector<std::string> ids;
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<std::string> queues{q};
    CO_LET(auto reg, api.register_queues(std::move(queues)));
    REQUIRE(reg.has_value());
    CO_LET(auto src, api.source_index(q));
    const long long source = src.value();
    auto assign_n = [&](int n) -> asio::awaitable<void> {
      for (int i = 0; i < n; ++i) {
        std::string user = "u" + std::to_string(ids.size());
        std::string res = "r" + std::to_string(ids.size());
        std::vector<std::string> rs{res};
        CO_LET(auto add, api.add_resources(q, rs, ""));
        REQUIRE(add.has_value());
        CO_LET(auto j, api.join(q, user));
        REQUIRE(j.has_value());
        CO_LET(auto a, api.assign_one(q, source, 0, 0));
        REQUIRE(a.has_value());
        REQUIRE(a.value().has_value());
        CHECK(a.value()->user == user);
        ids.push_back(a.value()->id);
      }
    };
    CO_DO(assign_n(2));
    // The queue's slot loses its last writes: the sequence is back at 0.
    auto rollback = cmd({"SET", fx.k.queue(q, "seq"), "0"});
    CO_LET(auto s1, fx.conn->exec(std::move(rollback)));
    CHECK(s1.ok());
    // A failover takes seconds; within the same millisecond the clock would not have moved.
    CO_DO(pushonce::test::co_let_lapse(std::chrono::milliseconds(10), "the clock's millisecond"));
    CO_DO(assign_n(1));
    // A sequence ahead of the clock goes on from where it stands.
    auto set_big = cmd({"SET", fx.k.queue(q, "seq"), "1099511627775"});  // 2^40 - 1
    CO_LET(auto s2, fx.conn->exec(std::move(set_big)));
    CHECK(s2.ok());
    CO_DO(assign_n(1));  // seq 2^40: exactly 2^52 + 16
    // The slot loses that last write while the sequence is ahead of the clock (a burst):
    // the clock does not cover it, the ids this process made do (core/id_floor.hpp).
    auto lose_last = cmd({"SET", fx.k.queue(q, "seq"), "1099511627775"});
    CO_LET(auto s3, fx.conn->exec(std::move(lose_last)));
    CHECK(s3.ok());
    CO_DO(assign_n(1));
  });
  REQUIRE(ids.size() == 5);
  // (ms since 2026-01-01) x 4 at the time of this test, at least.
  const long long floor_seq = (std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count() -
                               1767225600000LL - 60000) *
                              4;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    CAPTURE(ids[i]);
    CHECK(decimal_id(ids[i]));
    CHECK(std::stoll(ids[i]) % 4096 == 16);
    CHECK(std::stoll(ids[i]) / 4096 > floor_seq);
    if (i > 0) CHECK(pushonce::compare_ids(ids[i - 1], ids[i]) < 0);
  }
  CHECK(ids[3] == "4503599627370512");
  CHECK(ids[4] == "4503599627374608");  // seq 2^40 + 1, not 2^40 again
  // Where string order would be wrong (15 digits against 16), the numeric order is right.
  CHECK(ids[2] > ids[3]);
  CHECK(pushonce::compare_ids(ids[2], ids[3]) < 0);
}

}  // namespace test_queue_scripts_integration
