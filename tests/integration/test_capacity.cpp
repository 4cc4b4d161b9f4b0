// Capacity (docs/capacity.md) against a real redis-server, through core/queue_api: the rate's
// clock (due instants, banking while nobody waits, catch-up at twice the pace), passes, the
// active cap, leases (expiry with a reason, renewal by accept and by id, renewal off),
// release by admission id (idempotent, an `expired` message with reason "released"), and a
// new rate restarting the clock. Clock positions are written into the settings hash, so no
// case waits on the clock.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "core/lua/settings.hpp"
#include "core/queue_api.hpp"
#include "core/queue_refusals.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_capacity_integration {

namespace asio = boost::asio;
using pushonce::queue_api;
using pushonce::test::cmd;
using pushonce::test::redis_fixture;

namespace {

asio::awaitable<long long> capacity_setup(queue_api& api, const std::string& q,
                                          std::vector<std::string> users,
                                          std::vector<std::string> resources,
                                          pushonce::settings_change settings) {
  std::vector<std::string> queues{q};
  auto reg = co_await api.register_queues(std::move(queues));
  REQUIRE(reg.has_value());
  if (!settings.empty()) {
    pushonce::lua::settings_call c;
    c.queue = q;
    c.op = pushonce::lua::settings_op::set;
    c.fields = std::move(settings);
    auto s = co_await api.settings(std::move(c));
    REQUIRE(s.has_value());
  }
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
  std::string qs = q;
  auto src = co_await api.source_index(std::move(qs));
  REQUIRE(src.has_value());
  co_return src.value();
}

// Redis's clock, ms.
asio::awaitable<long long> redis_now(redis_fixture& fx) {
  CO_LET(auto t, fx.conn->exec(cmd({"TIME"})));
  co_return std::stoll(t.value.at(0).str) * 1000 + std::stoll(t.value.at(1).str) / 1000;
}

// Puts the rate's clock where a test wants it (prelude.lua capacity_at).
asio::awaitable<void> set_clock(redis_fixture& fx, const std::string& q, long long start,
                                long long made, long long last) {
  CO_LET(auto r, fx.conn->exec(cmd({"HSET", fx.k.queue(q, "settings"), "clock_start",
                                    std::to_string(start), "clock_made", std::to_string(made),
                                    "clock_last", std::to_string(last)})));
  REQUIRE(r.ok());
}

asio::awaitable<std::vector<std::string>> outbox_lines(redis_fixture& fx, const std::string& q) {
  CO_LET(auto r, fx.conn->exec(cmd({"XRANGE", fx.k.queue(q, "outbox"), "-", "+"})));
  std::vector<std::string> out;
  for (const auto& e : r.value.elements) out.push_back(e.at(1).field("m").str);
  co_return out;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("capacity: a rate with passes admits one at the first due instant, then waits") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, capacity_setup(api, q, {"a", "b", "c"}, {}, {{"rate_per_min", "60"}}));
    CO_LET(auto first, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(first.value().size() == 1);
    CHECK(first.value()[0].user == "a");
    CHECK(first.value()[0].resource.rfind("pass:", 0) == 0);
    CO_LET(auto lines, outbox_lines(fx, q));
    CHECK(has(lines.back(), R"("kind":"pass")"));
    // The next instant is a second away.
    CO_LET(auto second, api.assign_batch(q, source, 0, 0, 10));
    CHECK(second.value().empty());
    CO_LET(auto due, api.next_due_ms(q));
    CHECK(due.value() > 900);
    CHECK(due.value() <= 1000);
    // The leader's status shows the live admission.
    pushonce::lua::settings_call get;
    get.queue = q;
    CO_LET(auto s, api.settings(std::move(get)));
    CHECK(s.value().settings.active == 1);
    CHECK(s.value().settings.rate_per_min == 60);
  });
}

TEST_CASE("capacity: passes owed from a hand-over are made up at twice the pace") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  std::vector<std::string> users;
  for (int i = 0; i < 100; ++i) users.push_back("u" + std::to_string(i));
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, capacity_setup(api, q, users, {}, {{"rate_per_min", "600"}}));
    // 60 s of instants were due (600 owed), the last one made 1 s ago: 1 s at twice the pace
    // of 10 a second makes 20 now, not 600.
    CO_LET(long long now, redis_now(fx));
    CO_DO(set_clock(fx, q, now - 60000, 1, now - 1000));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 1000));
    CHECK(batch.value().size() >= 20);
    CHECK(batch.value().size() <= 21);
  });
}

TEST_CASE("capacity: nobody waiting banks at most max(1, burst) passes") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  for (const char* burst : {"0", "3"}) {
    CAPTURE(burst);
    fx.run([&]() -> asio::awaitable<void> {
      CO_LET(long long source,
             capacity_setup(api, q, {}, {}, {{"rate_per_min", "60"}, {"burst", burst}}));
      CO_LET(long long now, redis_now(fx));
      CO_DO(set_clock(fx, q, now - 60000, 0, now - 60000));  // 61 instants due, idle
      CO_LET(auto idle, api.assign_batch(q, source, 0, 0, 100));
      CHECK(idle.value().empty());
      for (int i = 0; i < 10; ++i) {
        std::string qq = q;
        CO_LET(auto j, api.join(std::move(qq), "w" + std::to_string(i)));
        REQUIRE(j.has_value());
      }
      CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 100));
      CHECK(batch.value().size() == (std::string(burst) == "0" ? 1u : 3u));
      CO_LET(auto flush, fx.conn->exec(cmd({"FLUSHALL"})));
      REQUIRE(flush.ok());
    });
  }
}

TEST_CASE("capacity: with passes off the rate paces the stock; a new rate restarts the clock") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, capacity_setup(api, q, {"a", "b", "c", "d"}, {},
                                            {{"rate_per_min", "60"}, {"passes", "0"}}));
    CO_LET(auto none, api.assign_batch(q, source, 0, 0, 10));
    CHECK(none.value().empty());  // no stock, no passes
    CO_LET(auto add, api.add_resources(q, {"r1", "r2", "r3"}, ""));
    REQUIRE(add.has_value());
    CO_LET(auto one, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(one.value().size() == 1);
    CHECK(one.value()[0].resource == "r1");
    CO_LET(auto wait, api.assign_batch(q, source, 0, 0, 10));
    CHECK(wait.value().empty());
    // A new rate: its clock starts at the change (one due at once).
    CO_LET(long long now, redis_now(fx));
    CO_DO(set_clock(fx, q, now - 1000, 5, now - 1000));
    pushonce::lua::settings_call c;
    c.queue = q;
    c.op = pushonce::lua::settings_op::set;
    c.fields = {{"rate_per_min", "30"}};
    CO_LET(auto s, api.settings(std::move(c)));
    REQUIRE(s.has_value());
    CO_LET(auto clock, fx.conn->exec(cmd({"HEXISTS", fx.k.queue(q, "settings"), "clock_made"})));
    CHECK(clock.value.integer == 0);
    CO_LET(auto next, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(next.value().size() == 1);
    CHECK(next.value()[0].resource == "r2");
  });
}

TEST_CASE("capacity: max_active caps live admissions across batches; an ending frees a place") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, capacity_setup(api, q, {"a", "b", "c", "d", "e"},
                                            {"r1", "r2", "r3", "r4", "r5"}, {{"max_active", "2"}}));
    CO_LET(auto one, api.assign_batch(q, source, 0, 0, 1));
    CO_LET(auto two, api.assign_batch(q, source, 0, 0, 10));
    CHECK(one.value().size() == 1);
    CHECK(two.value().size() == 1);
    CO_LET(auto capped, api.assign_batch(q, source, 0, 0, 10));
    CHECK(capped.value().empty());
    // The plan sees the cap too.
    CO_LET(auto plan, api.plan_assign(q, 10));
    CHECK(plan.value().pairs.empty());
    CO_LET(auto acc, api.accept(q, "a", ""));
    REQUIRE(acc.has_value());
    CHECK_FALSE(acc.value().expires_at);  // no --session: no lease
    CO_LET(auto still, api.assign_batch(q, source, 0, 0, 10));
    CHECK(still.value().empty());  // accepted is live too
    CO_LET(auto rel, api.release_resource(q, "r1"));
    REQUIRE(rel.has_value());
    CO_LET(auto three, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(three.value().size() == 1);
    CHECK(three.value()[0].user == "c");
  });
}

TEST_CASE("capacity: a lease ends as `lease`, gives the resource back, and a pass is gone") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source,
           capacity_setup(api, q, {"a", "b", "c"}, {"r1"},
                          {{"session_s", "600"}, {"rate_per_min", "600"}, {"burst", "5"}}));
    CO_LET(long long now, redis_now(fx));
    CO_DO(set_clock(fx, q, now - 10000, 0, now - 10000));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(batch.value().size() == 3);
    CHECK(batch.value()[0].resource == "r1");
    const auto pass = batch.value()[1].resource;
    CHECK(pass.rfind("pass:", 0) == 0);
    CO_LET(auto lease_a, fx.conn->exec(cmd({"ZSCORE", fx.k.queue(q, "leases"), "a"})));
    CHECK(std::stoll(lease_a.value.str) >= now + 600000);
    CO_LET(auto lines, outbox_lines(fx, q));
    CHECK(has(lines.back(), R"("expires_at":)" + lease_a.value.str + "}"));

    // The state answers the lease's end; an accept renews it.
    CO_LET(auto st, api.admission_record(q, batch.value()[0].id));
    REQUIRE(st.value());
    CHECK(st.value()->expires_at == std::stoll(lease_a.value.str));
    CO_LET(auto shorten,
           fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "leases"), std::to_string(now + 1000), "a"})));
    REQUIRE(shorten.ok());
    CO_LET(auto acc, api.accept(q, "a", ""));
    REQUIRE(acc.has_value());
    CO_LET(auto renewed, fx.conn->exec(cmd({"ZSCORE", fx.k.queue(q, "leases"), "a"})));
    CHECK(std::stoll(renewed.value.str) >= now + 600000);
    // The accept answers the renewed end (the accepted frame's expires_at).
    CHECK(acc.value().expires_at == std::stoll(renewed.value.str));

    // a's and b's leases run out.
    for (const char* u : {"a", "b"}) {
      CO_LET(auto past, fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "leases"), "1", u})));
      REQUIRE(past.ok());
    }
    CO_LET(auto ended, api.expire_batch(q, source, 0, 10));
    REQUIRE(ended.value().size() == 2);
    CO_LET(auto after, outbox_lines(fx, q));
    CHECK(has(after.back(), R"("reason":"lease")"));
    CO_LET(auto free, fx.conn->exec(cmd({"ZRANGE", fx.k.queue(q, "res:free"), "0", "-1"})));
    REQUIRE(free.value.elements.size() == 1);  // r1 is back, the pass is not
    CHECK(free.value.elements[0].str == "r1");
    CO_LET(auto st_a, api.admission_record(q, batch.value()[0].id));
    CHECK(st_a.value()->state == "expired");
    CHECK_FALSE(st_a.value()->expires_at);
    // A renewal of an ended admission: expired.
    CO_LET(auto late, api.renew_admission(q, batch.value()[1].id));
    REQUIRE_FALSE(late.has_value());
    CHECK(late.error().code == pushonce::errc_expired);
  });
}

TEST_CASE("capacity: renewal by id extends a live lease; with renewal off it does not") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source,
           capacity_setup(api, q, {"a", "b"}, {"r1", "r2"}, {{"session_s", "60"}}));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(batch.value().size() == 2);
    CO_LET(long long now, redis_now(fx));
    CO_LET(auto shorten,
           fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "leases"), std::to_string(now + 5000), "a"})));
    REQUIRE(shorten.ok());
    CO_LET(auto renewed, api.renew_admission(q, batch.value()[0].id));
    REQUIRE(renewed.has_value());
    CHECK(renewed.value().state == "assigned");
    CHECK(renewed.value().expires_at >= now + 59000);
    // A check made before the lease ended renews from its own time, never backwards.
    CO_LET(auto old_check, api.renew_admission(q, batch.value()[0].id, now - 30000));
    CHECK(old_check.value().expires_at == renewed.value().expires_at);

    pushonce::lua::settings_call off;
    off.queue = q;
    off.op = pushonce::lua::settings_op::set;
    off.fields = {{"session_renewal", "0"}};
    CO_LET(auto s, api.settings(std::move(off)));
    REQUIRE(s.has_value());
    CO_LET(auto shorten_b,
           fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "leases"), std::to_string(now + 5000), "b"})));
    REQUIRE(shorten_b.ok());
    CO_LET(auto hard, api.renew_admission(q, batch.value()[1].id));
    CHECK(hard.value().expires_at == now + 5000);
    CO_LET(auto acc, api.accept(q, "b", ""));
    REQUIRE(acc.has_value());
    CO_LET(auto after, fx.conn->exec(cmd({"ZSCORE", fx.k.queue(q, "leases"), "b"})));
    CHECK(std::stoll(after.value.str) == now + 5000);
  });
}

TEST_CASE("capacity: a record outlives its lease's end, past --admission-ttl, when renewed") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  api.set_admission_record_time(std::chrono::milliseconds(1));  // far shorter than the lease
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source,
           capacity_setup(api, q, {"a", "b", "c"}, {"r1", "r2", "r3"}, {{"session_s", "60"}}));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 2));
    REQUIRE(batch.value().size() == 2);
    const auto keep_until = [&](const std::string& id) -> asio::awaitable<long long> {
      auto score = cmd({"ZSCORE", fx.k.queue(q, "admissions:t"), id});
      auto r = co_await fx.conn->exec(std::move(score));
      co_return r.value.is_string() ? std::stoll(r.value.str) : -1;
    };
    const std::string a_id = batch.value()[0].id, b_id = batch.value()[1].id;
    CO_LET(auto a_state, api.renew_admission(q, a_id));
    REQUIRE(a_state.has_value());
    CO_LET(long long a_kept, keep_until(a_id));
    CHECK(a_kept >= *a_state.value().expires_at + 60000);  // from the assignment
    // A renewal far ahead (the lease moved out) keeps the record past the new end.
    CO_LET(long long now, redis_now(fx));
    CO_LET(auto near,
           fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "leases"), std::to_string(now + 1000), "a"})));
    REQUIRE(near.ok());
    CO_LET(auto far,
           fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "admissions:t"), "1", a_id})));  // aged out
    REQUIRE(far.ok());
    CO_LET(auto renewed, api.renew_admission(q, a_id));
    REQUIRE(renewed.has_value());
    CO_LET(long long a_after, keep_until(a_id));
    CHECK(a_after >= *renewed.value().expires_at + 60000);
    // An accept renews the record with the lease.
    CO_LET(auto aged_b, fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "admissions:t"), "1", b_id})));
    REQUIRE(aged_b.ok());
    CO_LET(auto acc, api.accept(q, "b", ""));
    REQUIRE(acc.has_value());
    CO_LET(long long b_after, keep_until(b_id));
    CHECK(b_after >= now + 60000);
    // The next batch drops records past their time: both still answer.
    CO_LET(auto next, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(next.value().size() == 1);
    CO_LET(auto a_again, api.renew_admission(q, a_id));
    CHECK(a_again.has_value());
    CO_LET(auto b_again, api.renew_admission(q, b_id));
    CHECK(b_again.has_value());
  });
}

TEST_CASE("capacity: removing a held resource ends its holder's lease") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, capacity_setup(api, q, {"a"}, {"r1"}, {{"session_s", "60"}}));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(batch.value().size() == 1);
    CO_LET(auto leased, fx.conn->exec(cmd({"ZCARD", fx.k.queue(q, "leases")})));
    CHECK(leased.value.integer == 1);
    CO_LET(auto rm, api.remove_resource(q, "r1"));
    REQUIRE(rm.has_value());
    // No lease is left to end a later admission of the same user early.
    CO_LET(auto left, fx.conn->exec(cmd({"ZCARD", fx.k.queue(q, "leases")})));
    CHECK(left.value.integer == 0);
  });
}

TEST_CASE("capacity: release by admission id is idempotent and tells the user why") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source,
           capacity_setup(api, q, {"a", "b"}, {}, {{"rate_per_min", "60"}, {"burst", "2"}}));
    CO_LET(long long now, redis_now(fx));
    CO_DO(set_clock(fx, q, now - 10000, 0, now - 10000));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(batch.value().size() == 2);
    const auto id = batch.value()[0].id;
    CO_LET(auto rel, api.release_admission(q, id));
    REQUIRE(rel.has_value());
    CHECK(rel.value().state == "released");
    CHECK(rel.value().user == "a");
    CHECK_FALSE(rel.value().message_id.empty());
    CO_LET(auto lines, outbox_lines(fx, q));
    CHECK(has(lines.back(), R"("kind":"expired")"));
    CHECK(has(lines.back(), R"("reason":"released")"));
    CHECK(has(lines.back(), R"("id":")" + id + "\""));
    CO_LET(auto again, api.release_admission(q, id));
    REQUIRE(again.has_value());
    CHECK(again.value().state == "released");
    CHECK(again.value().message_id.empty());
    CO_LET(auto free, fx.conn->exec(cmd({"ZCARD", fx.k.queue(q, "res:free")})));
    CHECK(free.value.integer == 0);  // a pass does not go back to the pool
    CO_LET(auto renew, api.renew_admission(q, id));
    REQUIRE_FALSE(renew.has_value());
    CHECK(renew.error().code == pushonce::errc_released);
    // A pass is released by its name too (`resource release pass:N`).
    CO_LET(auto by_name, api.release_resource(q, batch.value()[1].resource));
    CHECK(by_name.has_value());
    CO_LET(auto unknown, api.release_admission(q, "12345"));
    REQUIRE_FALSE(unknown.has_value());
    CHECK(unknown.error().code == pushonce::errc::not_found);
  });
}

TEST_CASE("capacity: the report's per-minute counters follow joins, admissions and ends") {
  redis_fixture fx;
  queue_api api(fx.conn, fx.k);
  const std::string q = "default";
  fx.run([&]() -> asio::awaitable<void> {
    CO_LET(long long source, capacity_setup(api, q, {"a", "b", "c"}, {"r1", "r2"},
                                            {{"session_s", "600"}, {"max_active", "5"}}));
    CO_LET(auto batch, api.assign_batch(q, source, 0, 0, 10));
    REQUIRE(batch.value().size() == 2);
    CO_LET(auto rel, api.release_resource(q, "r1"));
    REQUIRE(rel.has_value());
    CO_LET(auto past, fx.conn->exec(cmd({"ZADD", fx.k.queue(q, "leases"), "1", "b"})));
    REQUIRE(past.ok());
    CO_LET(auto ended, api.expire_batch(q, source, 0, 10));
    REQUIRE(ended.value().size() == 1);
    // Summed over the minutes (a test may run across a minute's end).
    CO_LET(auto names, fx.conn->exec(cmd({"KEYS", fx.k.queue(q, "report:*")})));
    std::map<std::string, long long> sum;
    bool indexed = false;
    for (const auto& n : names.value.elements) {
      if (n.str == fx.k.queue(q, "report:tickets")) {
        indexed = true;
        continue;
      }
      CO_LET(auto ttl, fx.conn->exec(cmd({"PTTL", n.str})));
      CHECK(ttl.value.integer > 6 * 86400000LL);  // kept 7 days
      CO_LET(auto h, fx.conn->exec(cmd({"HGETALL", n.str})));
      for (std::size_t i = 0; i + 1 < h.value.elements.size(); i += 2)
        sum[h.value.elements[i].str] += std::stoll(h.value.elements[i + 1].str);
    }
    CHECK(indexed);
    CHECK(sum["joins"] == 3);
    CHECK(sum["admitted"] == 2);
    CHECK(sum["w:0"] == 2);  // admitted within the minute they joined
    CHECK(sum["released"] == 1);
    CHECK(sum["leases_expired"] == 1);
    CHECK(sum["l:0"] == 2);  // both ended within a second of their assignment
    CHECK(sum["active_peak"] >= 2);
    CHECK(sum["max_active"] >= 5);
  });
}

}  // namespace test_capacity_integration
