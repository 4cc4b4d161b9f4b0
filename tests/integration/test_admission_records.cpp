// Admission records and planned assignments (assign_plan.lua, assign.lua with a plan,
// accept.lua, expire.lua, resource_release.lua, resource_remove.lua through core/queue_api)
// against a real redis-server: assigned -> accepted / expired / released, the state read in
// one HGET, records that go after their time, a plan that went stale assigns nothing.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/admission_plan.hpp"
#include "core/queue_api.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_admission_records_integration {

namespace asio = boost::asio;
using pushonce::queue_api;
using pushonce::test::cmd;
using pushonce::test::redis_fixture;

namespace {

asio::awaitable<long long> admission_setup(queue_api& api, const std::string& q,
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
  std::string qq = q;
  auto add = co_await api.add_resources(std::move(qq), std::move(resources), "");
  REQUIRE(add.has_value());
  std::string qs = q;
  auto src = co_await api.source_index(std::move(qs));
  REQUIRE(src.has_value());
  co_return src.value();
}

// The state of assignment `id`, or "none".
asio::awaitable<std::string> state_of(queue_api& api, const std::string& q, const std::string& id) {
  std::string qq = q, ii = id;
  auto r = co_await api.admission_record(std::move(qq), std::move(ii));
  REQUIRE(r.has_value());
  co_return r.value() ? r.value()->state : std::string("none");
}

}  // namespace

TEST_CASE("admission records: assigned, then accepted, expired or released") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source,
           admission_setup(api, q, {"a", "b", "c", "d", "e"}, {"r1", "r2", "r3", "r4"}));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 60000, 10));
    REQUIRE(batch.value().size() == 4);
    const auto ida = batch.value()[0].id, idb = batch.value()[1].id, idc = batch.value()[2].id,
               idd = batch.value()[3].id;
    for (const auto& a : batch.value()) CHECK(co_await state_of(api, q, a.id) == "assigned");
    auto rec = cmd({"HGET", fx.k.queue(q, "admissions"), ida});
    CO_LET(auto raw, fx.conn->exec(std::move(rec)));
    CHECK(raw.value.str == "assigned a r1");
    // Without a plan the assignment's data.admission is null.
    auto out = cmd({"XRANGE", fx.k.queue(q, "outbox"), "-", "+"});
    CO_LET(auto lines, fx.conn->exec(std::move(out)));
    CHECK(lines.value.at(0).at(1).field("m").str.find(R"("admission":null)") != std::string::npos);

    CO_LET(auto acc, api.accept(q, "a", ""));
    REQUIRE(acc.has_value());
    CHECK(co_await state_of(api, q, ida) == "accepted");
    // Accepting twice answers the same and keeps the state.
    CO_LET(auto acc2, api.accept(q, "a", ida));
    REQUIRE(acc2.has_value());
    CHECK(co_await state_of(api, q, ida) == "accepted");

    auto past = cmd({"ZADD", fx.k.queue(q, "pending"), "1", "b"});
    CO_LET(auto p, fx.conn->exec(std::move(past)));
    REQUIRE(p.ok());
    CO_LET(auto expired, api.expire_batch(q, source, 0, 10));
    REQUIRE(expired.value().size() == 1);
    CHECK(co_await state_of(api, q, idb) == "expired");

    CO_LET(auto rel, api.release_resource(q, "r3"));
    REQUIRE(rel.has_value());
    CHECK(co_await state_of(api, q, idc) == "released");
    // An accepted assignment is released as well.
    CO_LET(auto rel1, api.release_resource(q, "r1"));
    REQUIRE(rel1.has_value());
    CHECK(co_await state_of(api, q, ida) == "released");
    // Removing a held resource ends its assignment: released.
    CO_LET(auto rem, api.remove_resource(q, "r4"));
    REQUIRE(rem.has_value());
    CHECK(co_await state_of(api, q, idd) == "released");

    CHECK(co_await state_of(api, q, "999999") == "none");
  });
}

TEST_CASE("admission records: kept for their time, then removed a bounded number per call") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  api.set_admission_record_time(std::chrono::milliseconds(1));
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, admission_setup(api, q, {"a", "b", "c"}, {"r1", "r2", "r3"}));
    CO_LET(auto first, api.assign_batch(q, source, 0, 0, 2));
    REQUIRE(first.value().size() == 2);
    CO_DO(pushonce::test::co_let_lapse(std::chrono::milliseconds(5), "their 1 ms record time"));
    CO_LET(auto second, api.assign_batch(q, source, 0, 0, 2));
    REQUIRE(second.value().size() == 1);
    CHECK(co_await state_of(api, q, first.value()[0].id) == "none");
    CHECK(co_await state_of(api, q, first.value()[1].id) == "none");
    auto len = cmd({"HLEN", fx.k.queue(q, "admissions")});
    CO_LET(auto n, fx.conn->exec(std::move(len)));
    CHECK(n.value.integer == 1);
    auto zlen = cmd({"ZCARD", fx.k.queue(q, "admissions:t")});
    CO_LET(auto zn, fx.conn->exec(std::move(zlen)));
    CHECK(zn.value.integer == 1);
  });
}

TEST_CASE("planned assignment: the plan's ids and the tokens; a stale plan assigns nothing") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, admission_setup(api, q, {"a", "b", "c"}, {"r1", "r2"}));
    CO_LET(auto plan, api.plan_assign(q, 10));
    REQUIRE(plan.has_value());
    REQUIRE(plan.value().pairs.size() == 2);
    CHECK(plan.value().pairs[0] == std::pair<std::string, std::string>{"a", "r1"});
    CHECK(plan.value().pairs[1] == std::pair<std::string, std::string>{"b", "r2"});

    // r1 taken out and added back since the plan (now after r2): the pairs differ, nothing
    // is assigned. (A resource added at the tail leaves the plan's pairs first: they go.)
    auto stale_plan = plan.value();
    CO_LET(auto rm, api.remove_resource(q, "r1"));
    REQUIRE(rm.has_value());
    CO_LET(auto back, api.add_resources(q, {"r1", "r3"}, ""));
    REQUIRE(back.has_value());
    CO_LET(auto stale, api.assign_planned(q, source, 0, 0, 10, stale_plan, {"t1", "t2"}));
    REQUIRE(stale.has_value());
    CHECK_FALSE(stale.value());
    auto held = cmd({"HLEN", fx.k.queue(q, "assigned")});
    CO_LET(auto h0, fx.conn->exec(std::move(held)));
    CHECK(h0.value.integer == 0);

    // Planned again: three pairs, the ids as planned, each line carrying its token.
    CO_LET(auto plan2, api.plan_assign(q, 10));
    REQUIRE(plan2.value().pairs.size() == 3);
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < 3; ++i)
      ids.push_back(pushonce::admission::planned_id(plan2.value(), i, source));
    // The sequence moved past the plan's base (another writer took ids from it): stale too.
    auto bump =
        cmd({"SET", fx.k.queue(q, "seq"), std::to_string(std::stoll(plan2.value().seq) + 1)});
    auto seq_plan = plan2.value();
    CO_LET(auto b, fx.conn->exec(std::move(bump)));
    REQUIRE(b.ok());
    CO_LET(auto stale2, api.assign_planned(q, source, 0, 0, 10, seq_plan, {"x", "y", "z"}));
    CHECK_FALSE(stale2.value());

    CO_LET(auto plan3, api.plan_assign(q, 10));
    ids.clear();
    for (std::size_t i = 0; i < 3; ++i)
      ids.push_back(pushonce::admission::planned_id(plan3.value(), i, source));
    CO_LET(auto done, api.assign_planned(q, source, 0, 0, 10, plan3.value(),
                                         {"tok.a.1", "tok.b.2", "tok.c.3"}));
    REQUIRE(done.has_value());
    REQUIRE(done.value());
    REQUIRE(done.value()->size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK((*done.value())[i].id == ids[i]);
    auto out = cmd({"XRANGE", fx.k.queue(q, "outbox"), "-", "+"});
    CO_LET(auto lines, fx.conn->exec(std::move(out)));
    auto text = lines.value.at(0).at(1).field("m").str;
    CHECK(text.find(R"("user":"a")") != std::string::npos);
    CHECK(text.find(R"("admission":"tok.a.1")") != std::string::npos);
    CHECK(text.find(R"("admission":"tok.c.3")") != std::string::npos);
    CHECK(co_await state_of(api, q, ids[2]) == "assigned");

    // Nothing left to pair: an idle plan.
    CO_LET(auto idle, api.plan_assign(q, 10));
    CHECK(idle.value().idle());
  });
}

}  // namespace test_admission_records_integration
