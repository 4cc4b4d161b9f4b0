// publish.lua called directly through its builder (lua::publish_for,
// parse_publish_reply): a batch is ONE outbox entry (field m, one line per message) and
// ONE PUBLISH; idempotency keys inside one batch (a repeat is a duplicate of its first
// use) and across calls inside the window; a batch of only duplicates writes nothing.
#include "core/lua/publish.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/message.hpp"
#include "core/redis/scripts.hpp"
#include "tests/integration/redis_fixture.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_publish_script_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::lua::publish_item;
using pushonce::test::cmd;
using pushonce::test::co_let_lapse;
using pushonce::test::co_observe_quiet;
using pushonce::test::co_wait_until;
using pushonce::test::received;
using pushonce::test::redis_fixture;

namespace {

publish_item item(std::string user, std::string data,
                  std::optional<std::string> key = std::nullopt) {
  return publish_item{std::move(user), std::move(data), std::move(key)};
}

asio::awaitable<pushonce::redis::result> publish(pushonce::redis::connection& c,
                                                 const pushonce::keys& k,
                                                 std::vector<publish_item> batch,
                                                 long long window_ms = 60000) {
  pushonce::lua::publish_settings s;
  s.shard = 0;
  s.dedup_window = std::chrono::milliseconds(window_ms);
  s.outbox_retention = std::chrono::minutes(2);
  std::vector<pushonce::redis::command> cmds;
  cmds.push_back(pushonce::lua::script_command(pushonce::lua::publish_for(k, s, batch)));
  const auto& script = pushonce::redis::get_script("publish");
  CO_LET(auto rs, pushonce::redis::eval_all(c, script, std::move(cmds)));
  co_return std::move(rs.front());
}

// "id" or "id dup" per message.
std::vector<std::string> words(const pushonce::redis::result& r, std::size_t n) {
  if (!r.ok()) return {"error: " + r.value.str};
  auto p = pushonce::lua::parse_publish_reply(r.value, n);
  if (!p) return {"unexpected reply"};
  std::vector<std::string> out;
  for (auto& o : *p) out.push_back(o.duplicate ? o.id + " dup" : o.id);
  return out;
}

}  // namespace

TEST_CASE("publish.lua: a batch is one outbox entry and one PUBLISH; keys inside a batch") {
  redis_fixture fx;
  received bus;
  auto sub = fx.subscriber(bus);
  const std::string bus_ch = fx.k.bus_channel();
  std::string outbox_m;
  fx.run([&]() -> asio::awaitable<void> {
    std::string ch = bus_ch;
    CO_LET(auto sec, sub->subscribe(std::move(ch)));
    REQUIRE_FALSE(sec);

    std::vector<publish_item> batch{item("ann", R"({"a":1})", "k1"), item("ann", "2"),
                                    item("ann", "3", "k1"), item("ben", "4", "k1"),
                                    item("ann", "5", "k2")};
    CO_LET(auto r, publish(*fx.conn, fx.k, batch));
    // k1 repeated for ann: a duplicate of its first use; ben's k1 is his own key.
    CHECK(words(r, 5) == std::vector<std::string>{"4096", "8192", "4096 dup", "12288", "16384"});

    auto range = cmd({"XRANGE", fx.k.bus(0, "outbox"), "-", "+"});
    CO_LET(auto x, fx.conn->exec(range));
    REQUIRE(x.value.elements.size() == 1);
    const auto& fields = x.value.elements[0].at(1).elements;
    REQUIRE(fields.size() == 2);
    CHECK(fields[0].str == "m");
    outbox_m = fields[1].str;

    auto pttl = cmd({"PTTL", fx.k.idem(0, "ann", "k1")});
    CO_LET(auto t, fx.conn->exec(std::move(pttl)));
    CHECK(t.value.integer > 55000);
    CHECK(t.value.integer <= 60000);

    // The same keys again inside the window: duplicates, nothing written or published.
    std::vector<publish_item> again{item("ann", "6", "k1"), item("ben", "7", "k1"),
                                    item("ann", "8", "k2")};
    CO_LET(auto r2, publish(*fx.conn, fx.k, again));
    CHECK(words(r2, 3) == std::vector<std::string>{"4096 dup", "12288 dup", "16384 dup"});
    CO_LET(auto x2, fx.conn->exec(range));
    CHECK(x2.value.elements.size() == 1);

    // A mixed batch: only its fresh messages are written, as one more entry.
    std::vector<publish_item> mixed{item("ann", "9", "k1"), item("cy", "10", "k9")};
    CO_LET(auto r3, publish(*fx.conn, fx.k, mixed));
    auto w3 = words(r3, 2);
    REQUIRE(w3.size() == 2);
    CHECK(w3[0] == "4096 dup");
    CHECK(w3[1].find("dup") == std::string::npos);
    CO_LET(auto x3, fx.conn->exec(range));
    REQUIRE(x3.value.elements.size() == 2);
    CHECK(pushonce::split_bus_payload(x3.value.elements[1].at(1).at(1).str).size() == 1);

    CO_LET(bool two, co_wait_until([&] { return bus.count(bus_ch) >= 2; }, 2s));
    CHECK(two);
    CO_DO(co_observe_quiet(200ms, "a third bus payload"));
  });
  auto payloads = bus.payloads(bus_ch);
  REQUIRE(payloads.size() == 2);  // one PUBLISH per batch that had fresh messages
  CHECK(payloads[0] == outbox_m);
  auto lines = pushonce::split_bus_payload(payloads[0]);
  REQUIRE(lines.size() == 4);
  std::vector<std::string> ids, users;
  for (auto line : lines) {
    auto m = pushonce::parse_bus_message(line);
    REQUIRE(m);
    ids.push_back(m->id);
    users.push_back(m->user);
    CHECK(m->src == "bus:0");
  }
  CHECK(ids == std::vector<std::string>{"4096", "8192", "12288", "16384"});
  CHECK(users == std::vector<std::string>{"ann", "ann", "ben", "ann"});
  CHECK(std::string(lines[0]).rfind(
            R"({"id":"4096","user":"ann","src":"bus:0","kind":"message","data":{"a":1},"ts":)",
            0) == 0);
}

TEST_CASE("publish.lua: a key is forgotten after the window; bad requests") {
  redis_fixture fx;
  fx.run([&]() -> asio::awaitable<void> {
    std::vector<publish_item> b1{item("dot", "1", "k")};
    CO_LET(auto r1, publish(*fx.conn, fx.k, b1, 50));
    CHECK(words(r1, 1) == std::vector<std::string>{"4096"});
    CO_LET(auto r2, publish(*fx.conn, fx.k, b1, 50));
    CHECK(words(r2, 1) == std::vector<std::string>{"4096 dup"});
    CO_DO(co_let_lapse(120ms, "the key's 50 ms window"));
    CO_LET(auto r3, publish(*fx.conn, fx.k, b1, 50));
    CHECK(words(r3, 1) == std::vector<std::string>{"8192"});

    // Checked by the script too (a caller that skipped validate_publish).
    std::vector<publish_item> bad{item("not a name", "1")};
    CO_LET(auto e1, publish(*fx.conn, fx.k, bad));
    CHECK(e1.value.error_code() == "bad_request");
    std::vector<publish_item> empty{item("dot", "")};
    CO_LET(auto e2, publish(*fx.conn, fx.k, empty));
    CHECK(e2.value.error_code() == "bad_request");
    CO_LET(auto e3, publish(*fx.conn, fx.k, b1, 0));
    CHECK(e3.value.error_code() == "bad_request");
  });
}

TEST_CASE("publish.lua: an outbox write that fails leaves no idempotency key behind") {
  redis_fixture fx;
  const auto outbox = fx.k.bus(0, "outbox");
  fx.run([&]() -> asio::awaitable<void> {
    // The outbox key holds a string: the XADD fails, after the GETs and the INCRBY.
    auto broken = cmd({"SET", outbox, "not a stream"});
    CO_LET(auto b, fx.conn->exec(std::move(broken)));
    REQUIRE(b.ok());
    std::vector<publish_item> batch{item("ann", "1", "k1"), item("ann", "2"),
                                    item("ben", "3", "k2")};
    CO_LET(auto r1, publish(*fx.conn, fx.k, batch));
    CHECK_FALSE(r1.ok());
    CHECK(r1.value.is_error());
    for (auto key : {fx.k.idem(0, "ann", "k1"), fx.k.idem(0, "ben", "k2")}) {
      auto exists = cmd({"EXISTS", key});
      CO_LET(auto e, fx.conn->exec(std::move(exists)));
      CHECK(e.value.integer == 0);
    }
    // The outbox repaired, the same request again: published, not a duplicate of the failure.
    auto repair = cmd({"DEL", outbox});
    CO_LET(auto d, fx.conn->exec(std::move(repair)));
    REQUIRE(d.ok());
    CO_LET(auto r2, publish(*fx.conn, fx.k, batch));
    auto w = words(r2, 3);
    REQUIRE(w.size() == 3);
    for (const auto& word : w) CHECK(word.find("dup") == std::string::npos);
    auto range = cmd({"XRANGE", outbox, "-", "+"});
    CO_LET(auto x, fx.conn->exec(std::move(range)));
    REQUIRE(x.value.elements.size() == 1);
    CHECK(pushonce::split_bus_payload(x.value.elements[0].at(1).at(1).str).size() == 3);
    // And now the keys name the ids that were published.
    CO_LET(auto r3, publish(*fx.conn, fx.k, batch));
    auto w3 = words(r3, 3);
    REQUIRE(w3.size() == 3);
    CHECK(w3[0] == w[0] + " dup");
    CHECK(w3[1].find("dup") == std::string::npos);
    CHECK(w3[2] == w[2] + " dup");
  });
}

}  // namespace test_publish_script_integration
