// Batched assignment and expiry (assign.lua, expire.lua through core/queue_api), the queue
// events they publish and positions.lua, against a real redis-server.
#include "core/queue_api.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/message.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_queue_batches_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::queue_api;
using pushonce::test::cmd;
using pushonce::test::co_wait_until;
using pushonce::test::received;
using pushonce::test::redis_fixture;

namespace {

// Registers queue `q`, joins `users` and adds `resources`; returns the queue's source.
asio::awaitable<long long> setup(queue_api& api, const std::string& q,
                                 std::vector<std::string> users,
                                 std::vector<std::string> resources) {
  std::vector<std::string> queues{q};
  auto reg = co_await api.register_queues(std::move(queues));
  REQUIRE(reg.has_value());
  for (auto& u : users) {
    std::string qq = q;
    auto j = co_await api.join(std::move(qq), u);
    REQUIRE(j.has_value());
  }
  if (!resources.empty()) {
    std::string qq = q;
    auto add = co_await api.add_resources(std::move(qq), std::move(resources), "");
    REQUIRE(add.has_value());
  }
  std::string qq = q;
  auto src = co_await api.source_index(std::move(qq));
  REQUIRE(src.has_value());
  co_return src.value();
}

std::vector<std::string> users_of(const std::vector<pushonce::assignment>& batch) {
  std::vector<std::string> out;
  for (auto& a : batch) out.push_back(a.user);
  return out;
}

}  // namespace

TEST_CASE("queue batches: one call assigns in order, one bus message, one queue event") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  received heard;
  auto sub = fx.subscriber(heard);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    std::string bus = fx.k.bus_channel(), wake = fx.k.wake_channel();
    CO_LET(auto s1, sub->subscribe(std::move(bus)));
    CO_LET(auto s2, sub->subscribe(std::move(wake)));
    REQUIRE_FALSE(s1);
    REQUIRE_FALSE(s2);
    CO_LET(long long source, setup(api, q, {"u1", "u2", "u3", "u4", "u5"}, {"r1", "r2", "r3"}));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(batch.has_value());
    CHECK(users_of(batch.value()) == std::vector<std::string>{"u1", "u2", "u3"});
    CHECK(batch.value()[2].resource == "r3");
    // The two left move up to 1 and 2, true just after the assignment's event (event 6:
    // five joins, then one removal of three tickets).
    std::vector<std::string> ask{"u4", "u5", "u1"};
    CO_LET(auto pos, api.positions(q, std::move(ask)));
    REQUIRE(pos.has_value());
    CHECK(pos.value().seq == 6);
    REQUIRE(pos.value().users.size() == 3);
    CHECK(pos.value().users[0].position == 1);
    CHECK(pos.value().users[0].ticket == 4);
    CHECK(pos.value().users[1].position == 2);
    CHECK(pos.value().users[2].position == 0);  // assigned: not waiting
    auto xlen = cmd({"XLEN", fx.k.queue(q, "outbox")});
    CO_LET(auto xl, fx.conn->exec(std::move(xlen)));
    CHECK(xl.value.integer == 1);
    CO_LET(bool heard_all,
           co_wait_until([&] { return heard.count(fx.k.wake_channel()) >= 7; }, 2s));
    CHECK(heard_all);
  });
  auto payloads = heard.payloads(fx.k.bus_channel());
  REQUIRE(payloads.size() == 1);
  auto lines = pushonce::split_bus_payload(payloads[0]);
  REQUIRE(lines.size() == 3);
  for (auto line : lines) {
    std::string why;
    auto m = pushonce::parse_bus_message(line, &why);
    REQUIRE_MESSAGE(m, why);
    CHECK(m->src == "q:default");
  }
  auto wakes = heard.payloads(fx.k.wake_channel());
  CHECK(wakes.back() == "default 6 r 1 2 3");
}

TEST_CASE("queue batches: partial batches, no resource, empty queue, fencing") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, setup(api, q, {"a", "b", "c", "d", "e"}, {}));
    CO_LET(auto none_free, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(none_free.has_value());
    CHECK(none_free.value().empty());
    std::vector<std::string> ids{"r1", "r2", "r3", "r4", "r5", "r6"};
    CO_LET(auto add, api.add_resources(q, ids, ""));
    REQUIRE(add.has_value());
    CO_LET(auto b1, api.assign_batch(q, source, 5, 0, 2));
    CHECK(users_of(b1.value()) == std::vector<std::string>{"a", "b"});
    // A leader with an older fencing token is refused and changes nothing.
    CO_LET(auto old, api.assign_batch(q, source, 4, 0, 2));
    REQUIRE_FALSE(old.has_value());
    CHECK(old.error().code == pushonce::errc::fenced);
    CO_LET(auto b2, api.assign_batch(q, source, 5, 0, 2));
    CHECK(users_of(b2.value()) == std::vector<std::string>{"c", "d"});
    CO_LET(auto b3, api.assign_batch(q, source, 6, 0, 2));
    CHECK(users_of(b3.value()) == std::vector<std::string>{"e"});
    CO_LET(auto empty, api.assign_batch(q, source, 6, 0, 2));
    REQUIRE(empty.has_value());
    CHECK(empty.value().empty());
    // Each resource went to one user; two are still free.
    auto holders = cmd({"HLEN", fx.k.queue(q, "res:holder")});
    CO_LET(auto h, fx.conn->exec(std::move(holders)));
    CHECK(h.value.integer == 5);
    auto free_n = cmd({"ZCARD", fx.k.queue(q, "res:free")});
    CO_LET(auto f, fx.conn->exec(std::move(free_n)));
    CHECK(f.value.integer == 1);
    CO_LET(auto bad, api.assign_batch(q, source, 6, 0, 0));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == pushonce::errc::bad_request);
  });
}

TEST_CASE("queue batches: expiries in batches free the resources for the next users") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, setup(api, q, {"a", "b", "c", "d"}, {"r1", "r2", "r3"}));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 60000, 10));
    REQUIRE(batch.value().size() == 3);
    CO_LET(auto not_yet, api.expire_batch(q, source, 0, 10));
    REQUIRE(not_yet.has_value());
    CHECK(not_yet.value().empty());
    // a and b's deadlines have passed.
    auto past = cmd({"ZADD", fx.k.queue(q, "pending"), "1", "a", "1", "b"});
    CO_LET(auto p, fx.conn->exec(std::move(past)));
    REQUIRE(p.ok());
    CO_LET(auto e1, api.expire_batch(q, source, 0, 1));
    REQUIRE(e1.has_value());
    CHECK(users_of(e1.value()) == std::vector<std::string>{"a"});
    CO_LET(auto e2, api.expire_batch(q, source, 0, 10));
    CHECK(users_of(e2.value()) == std::vector<std::string>{"b"});
    CO_LET(auto e3, api.expire_batch(q, source, 0, 10));
    CHECK(e3.value().empty());
    // r1 and r2 are free again: d gets r1, then nobody waits.
    CO_LET(auto next, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(next.value().size() == 1);
    CHECK(next.value()[0].user == "d");
    CHECK(next.value()[0].resource == "r1");
    // An older fencing token cannot expire.
    auto fence = cmd({"SET", fx.k.queue(q, "fence"), "9"});
    CO_LET(auto fs, fx.conn->exec(std::move(fence)));
    REQUIRE(fs.ok());
    CO_LET(auto fenced, api.expire_batch(q, source, 8, 10));
    REQUIRE_FALSE(fenced.has_value());
    CHECK(fenced.error().code == pushonce::errc::fenced);
  });
}

}  // namespace test_queue_batches_integration
