#include "core/redis/subscription_set.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "core/redis/error.hpp"
#include "core/redis/hash_slot.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_subscription_set_unit {

using pushonce::redis::command;
using pushonce::redis::error;
using pushonce::redis::reply;
using pushonce::redis::subscription_set;
using ms = std::chrono::milliseconds;
using clock_type = subscription_set::clock_type;

namespace {

subscription_set::waiter into(std::optional<std::error_code>& o) {
  return [&o](std::error_code ec) { o = ec; };
}

reply push(std::vector<std::string> words) {
  reply r;
  r.kind = reply::type::array;
  for (auto& w : words) {
    reply e;
    e.kind = reply::type::string;
    e.str = std::move(w);
    r.elements.push_back(std::move(e));
  }
  return r;
}

reply confirm(const std::string& kind, const std::string& ch) {
  auto r = push({kind, ch});
  r.elements.push_back(reply{});
  r.elements.back().kind = reply::type::integer;
  r.elements.back().integer = 1;
  return r;
}

const auto far = clock_type::now() + std::chrono::hours(1);

}  // namespace

TEST_CASE(
    "subscription_set: subscribe while connected sends SUBSCRIBE; the confirmation completes") {
  subscription_set s(false, {});
  s.on_connected();
  CHECK(s.take_ready());  // nothing to resubscribe
  std::optional<std::error_code> w;
  s.subscribe("news", into(w), far);
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "news"}});
  CHECK(s.pending("news"));
  CHECK(!w);
  auto c = confirm("subscribe", "news");
  CHECK(!s.on_reply(c));
  REQUIRE(w);
  CHECK(!*w);
  // Already confirmed: a second subscribe completes at once and sends nothing.
  std::optional<std::error_code> w2;
  s.subscribe("news", into(w2), far);
  CHECK(w2);
  CHECK(!s.has_commands());
}

TEST_CASE("subscription_set: sharded channels use SSUBSCRIBE and SUNSUBSCRIBE, smessage passes") {
  subscription_set s(true, {});
  s.on_connected();
  std::optional<std::error_code> w;
  s.subscribe("u:1", into(w), far);
  s.unsubscribe("u:1");
  CHECK(s.take_commands() == std::vector<command>{{"SSUBSCRIBE", "u:1"}, {"SUNSUBSCRIBE", "u:1"}});
  s.subscribe("u:2", into(w), far);
  auto c = confirm("ssubscribe", "u:2");
  s.on_reply(c);
  auto m = push({"smessage", "u:2", "hello"});
  auto got = s.on_reply(m);
  REQUIRE(got);
  CHECK(got->channel == "u:2");
  CHECK(got->payload == "hello");
}

TEST_CASE("subscription_set: every wanted channel is subscribed again after a reconnect") {
  subscription_set s(false, {});
  std::optional<std::error_code> a, b;
  s.subscribe("a", into(a), far);  // not connected: waits for the connection
  s.subscribe("b", into(b), far);
  CHECK(!s.has_commands());
  s.on_connected();
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "a", "b"}});
  CHECK(!s.take_ready());
  auto ca = confirm("subscribe", "a");
  s.on_reply(ca);
  CHECK(a);
  CHECK(!s.take_ready());  // b is still due
  auto cb = confirm("subscribe", "b");
  s.on_reply(cb);
  CHECK(b);
  CHECK(s.take_ready());
  CHECK(!s.take_ready());  // once per connection

  s.on_disconnected();
  CHECK(!s.pending("a"));
  s.on_connected();
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "a", "b"}});
  s.on_reply(ca);
  s.on_reply(cb);
  CHECK(s.take_ready());
}

TEST_CASE("subscription_set: resubscribing many channels is split into bounded commands") {
  subscription_set s(false, {});
  std::optional<std::error_code> w;
  for (int i = 0; i < 1100; ++i) s.subscribe("ch" + std::to_string(i), into(w), far);
  s.on_connected();
  auto cmds = s.take_commands();
  REQUIRE(cmds.size() == 3);
  CHECK(cmds[0].size() == subscription_set::channels_per_command + 1);
  CHECK(cmds[2].size() == 1100 - 2 * subscription_set::channels_per_command + 1);
}

TEST_CASE("subscription_set: unsubscribe while the SUBSCRIBE is pending; messages stop at once") {
  subscription_set s(false, {});
  s.on_connected();
  std::optional<std::error_code> w;
  s.subscribe("x", into(w), far);
  s.unsubscribe("x");
  CHECK(!s.wants("x"));
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "x"}, {"UNSUBSCRIBE", "x"}});
  auto m = push({"message", "x", "late"});
  CHECK(!s.on_reply(m));  // not wanted any more: dropped
  auto c = confirm("subscribe", "x");
  s.on_reply(c);
  CHECK(w);
}

TEST_CASE("subscription_set: subscribe, unsubscribe, subscribe: only the last SUBSCRIBE confirms") {
  subscription_set s(false, {});
  s.on_connected();
  std::optional<std::error_code> first, second;
  s.subscribe("x", into(first), far);
  auto c = confirm("subscribe", "x");
  s.on_reply(c);
  CHECK(first);
  s.unsubscribe("x");
  s.subscribe("x", into(second), far);
  CHECK(s.take_commands() ==
        std::vector<command>{{"SUBSCRIBE", "x"}, {"UNSUBSCRIBE", "x"}, {"SUBSCRIBE", "x"}});
  auto u = confirm("unsubscribe", "x");
  s.on_reply(u);
  CHECK(!second);
  s.on_reply(c);
  CHECK(second);
  CHECK(s.wants("x"));
}

TEST_CASE(
    "subscription_set: two subscribes in flight: the waiter completes on the last confirmation") {
  subscription_set s(false, {});
  std::optional<std::error_code> w1, w2;
  s.subscribe("x", into(w1), far);
  s.on_connected();  // resubscribe sends x once
  s.unsubscribe("x");
  s.subscribe("x", into(w2), far);  // fresh again: a second SUBSCRIBE
  auto c = confirm("subscribe", "x");
  s.on_reply(c);
  CHECK(!w1);
  CHECK(!w2);
  s.on_reply(c);
  CHECK(w1);
  CHECK(w2);
}

TEST_CASE("subscription_set: an unsubscribe during resubscription still makes the set ready") {
  subscription_set s(false, {});
  std::optional<std::error_code> a, b;
  s.subscribe("a", into(a), far);
  s.subscribe("b", into(b), far);
  s.on_connected();
  auto ca = confirm("subscribe", "a");
  s.on_reply(ca);
  CHECK(!s.take_ready());
  s.unsubscribe("b");
  CHECK(s.take_ready());
}

TEST_CASE("subscription_set: waiters time out; the channel stays wanted for the next connect") {
  subscription_set s(false, {});
  auto t0 = clock_type::now();
  std::optional<std::error_code> w;
  s.subscribe("x", into(w), t0 + ms{100});
  s.expire(t0 + ms{99});
  CHECK(!w);
  s.expire(t0 + ms{100});
  REQUIRE(w);
  CHECK(*w == error::timeout);
  CHECK(s.wants("x"));
  s.on_connected();
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "x"}});
}

TEST_CASE("subscription_set: close fails the waiters and every later subscribe") {
  subscription_set s(false, {});
  std::optional<std::error_code> a, b;
  s.subscribe("a", into(a), far);
  s.close(error::stopped);
  CHECK(*a == error::stopped);
  s.subscribe("b", into(b), far);
  CHECK(*b == error::stopped);
  CHECK(s.waiters() == 0);
}

TEST_CASE(
    "subscription_set: a disconnect drops unsent commands; messages of unknown channels drop") {
  subscription_set s(false, {});
  s.on_connected();
  std::optional<std::error_code> w;
  s.subscribe("x", into(w), far);
  s.on_disconnected();
  CHECK(!s.has_commands());
  CHECK(!w);
  auto m = push({"message", "other", "p"});
  CHECK(!s.on_reply(m));
  auto pong = push({"pong", ""});
  CHECK(!s.on_reply(pong));
}

TEST_CASE("subscription_set: sharded resubscription sends one SSUBSCRIBE per slot") {
  subscription_set s(true, {});
  std::optional<std::error_code> w;
  // Two channels share the {u:a} slot; {u:b} is another slot.
  for (const char* ch : {"ns:{u:a}:ch", "ns:{u:b}:ch", "ns:{u:a}:x"}) s.subscribe(ch, into(w), far);
  s.on_connected();
  auto cmds = s.take_commands();
  REQUIRE(cmds.size() == 2);
  for (const auto& c : cmds) {
    CHECK(c.front() == "SSUBSCRIBE");
    for (std::size_t i = 2; i < c.size(); ++i)
      CHECK(pushonce::redis::hash_slot(c[i]) == pushonce::redis::hash_slot(c[1]));
  }
  CHECK(cmds[0].size() + cmds[1].size() == 5);
}

TEST_CASE("subscription_set: a sunsubscribe push for a wanted sharded channel drops it") {
  subscription_set s(true, {});
  s.on_connected();
  std::optional<std::error_code> w;
  s.subscribe("u:1", into(w), far);
  auto c = confirm("ssubscribe", "u:1");
  s.on_reply(c);
  CHECK(w);
  CHECK(s.take_dropped().empty());
  // The server gives the channel up (its slot migrated): not asked for here.
  auto gone = confirm("sunsubscribe", "u:1");
  s.on_reply(gone);
  CHECK(!s.wants("u:1"));
  CHECK(s.take_dropped() == std::vector<std::string>{"u:1"});
  CHECK(s.take_dropped().empty());
  // It is not subscribed again on this node after a reconnect.
  s.on_disconnected();
  s.on_connected();
  CHECK(s.take_commands().empty());
}

TEST_CASE("subscription_set: the confirmation of our own SUNSUBSCRIBE is not a drop") {
  subscription_set s(true, {});
  s.on_connected();
  std::optional<std::error_code> w1, w2;
  s.subscribe("u:1", into(w1), far);
  auto c = confirm("ssubscribe", "u:1");
  s.on_reply(c);
  s.unsubscribe("u:1");
  s.subscribe("u:1", into(w2), far);  // wanted again before the SUNSUBSCRIBE is confirmed
  auto u = confirm("sunsubscribe", "u:1");
  s.on_reply(u);
  CHECK(s.wants("u:1"));
  CHECK(s.take_dropped().empty());
  s.on_reply(c);
  CHECK(w2);
  CHECK(!*w2);
  // Classic Pub/Sub never drops: an unasked unsubscribe is ignored.
  subscription_set classic(false, {});
  classic.on_connected();
  std::optional<std::error_code> w3;
  classic.subscribe("x", into(w3), far);
  auto cx = confirm("subscribe", "x");
  classic.on_reply(cx);
  auto ux = confirm("unsubscribe", "x");
  classic.on_reply(ux);
  CHECK(classic.wants("x"));
  CHECK(classic.take_dropped().empty());
}

TEST_CASE("subscription_set: MOVED to an SSUBSCRIBE drops the slot's pending channels") {
  subscription_set s(true, {});
  s.on_connected();
  std::optional<std::error_code> moved, other;
  s.subscribe("ns:{u:a}:ch", into(moved), far);
  s.subscribe("ns:{u:b}:ch", into(other), far);
  auto slot = pushonce::redis::hash_slot("ns:{u:a}:ch");
  auto err = reply::make_error("MOVED " + std::to_string(slot) + " 127.0.0.1:7001");
  CHECK(!s.on_reply(err));
  REQUIRE(moved);
  CHECK(*moved == error::moved);
  CHECK(!s.wants("ns:{u:a}:ch"));
  CHECK(s.take_dropped() == std::vector<std::string>{"ns:{u:a}:ch"});
  CHECK(!other);
  CHECK(s.wants("ns:{u:b}:ch"));
  // Another error reply answers the next SSUBSCRIBE (b's): its channel is dropped too, to be
  // placed again after a look at the slot map.
  auto other_err = reply::make_error("ERR something");
  s.on_reply(other_err);
  CHECK(s.take_dropped() == std::vector<std::string>{"ns:{u:b}:ch"});
  // With no SSUBSCRIBE out, an error reply drops nothing.
  auto stray = reply::make_error("ERR stray");
  s.on_reply(stray);
  CHECK(s.take_dropped().empty());
}

TEST_CASE("subscription_set: NOPERM to an SSUBSCRIBE drops its channels as MOVED does") {
  subscription_set s(true, {});
  s.on_connected();
  std::optional<std::error_code> first, second;
  s.subscribe("ns:{u:a}:ch", into(first), far);
  s.subscribe("ns:{u:b}:ch", into(second), far);
  // The first SSUBSCRIBE is refused (a node just promoted, or demoted, during a failover).
  auto noperm = reply::make_error(
      "NOPERM this user has no permissions to access one of the "
      "channels used as arguments");
  CHECK(!s.on_reply(noperm));
  REQUIRE(first);
  CHECK(*first == error::moved);  // the sharded subscriber re-places it after a map refresh
  CHECK(s.take_dropped() == std::vector<std::string>{"ns:{u:a}:ch"});
  // The second one is confirmed as usual.
  CHECK(!second);
  auto ok = confirm("ssubscribe", "ns:{u:b}:ch");
  CHECK(!s.on_reply(ok));
  REQUIRE(second);
  CHECK(!*second);
  CHECK(s.wants("ns:{u:b}:ch"));
}

}  // namespace test_subscription_set_unit

namespace test_subscription_set_unit {

namespace {
reply error_reply(std::string text) {
  reply r;
  r.kind = reply::type::error;
  r.str = std::move(text);
  return r;
}
}  // namespace

TEST_CASE("subscription_set: a refused SUBSCRIBE after a reconnect is retried until confirmed") {
  subscription_set s(false, {});
  std::optional<std::error_code> a, b;
  s.subscribe("a", into(a), far);
  s.subscribe("b", into(b), far);
  s.on_connected();
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "a", "b"}});
  auto ca = confirm("subscribe", "a");
  s.on_reply(ca);
  s.on_disconnected();  // the link is cut while the Redis user may not subscribe
  s.on_connected();
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "a", "b"}});
  auto refused = error_reply(
      "NOPERM this user has no permissions to access one of the channels used as arguments");
  CHECK(!s.on_reply(refused));
  // The round of the reconnect is over (on_connect runs: the catch-ups of the others) ...
  CHECK(s.take_ready());
  CHECK(!s.pending("a"));
  CHECK(s.wants("a"));
  // ... and the refused channels are sent again after a backoff, until Redis confirms.
  CHECK(!s.has_commands());
  s.expire(clock_type::now() + std::chrono::minutes(1));
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "a", "b"}});
  CHECK(!s.on_reply(refused));
  CHECK(!s.has_commands());
  s.expire(clock_type::now() + std::chrono::minutes(1));
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "a", "b"}});
  auto ca2 = confirm("subscribe", "a");
  auto cb2 = confirm("subscribe", "b");
  s.on_reply(ca2);
  s.on_reply(cb2);
  auto m = push({"message", "a", "x"});
  CHECK(s.on_reply(m));
  s.expire(clock_type::now() + std::chrono::minutes(1));
  CHECK(!s.has_commands());  // nothing more to retry
}

TEST_CASE("subscription_set: a refused SUBSCRIBE fails its waiters at once") {
  subscription_set s(false, {});
  s.on_connected();
  CHECK(s.take_ready());
  std::optional<std::error_code> w;
  s.subscribe("news", into(w), far);
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "news"}});
  auto refused = error_reply("NOPERM no permissions");
  s.on_reply(refused);
  REQUIRE(w);
  CHECK(*w == make_error_code(error::refused));
  // A later subscribe while refused and not in flight fails at once too (no SUBSCRIBE per
  // caller: the retry has its own backoff).
  std::optional<std::error_code> w2;
  s.subscribe("news", into(w2), far);
  REQUIRE(w2);
  CHECK(*w2 == make_error_code(error::refused));
  CHECK(!s.has_commands());
}

}  // namespace test_subscription_set_unit

namespace test_subscription_set_unit {

TEST_CASE("subscription_set: an unsubscribed refused channel is not retried") {
  subscription_set s(false, {});
  std::optional<std::error_code> w;
  s.subscribe("a", into(w), far);
  s.subscribe("b", into(w), far);
  s.on_connected();
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "a", "b"}});
  auto refused = error_reply("NOPERM no permissions");
  s.on_reply(refused);
  CHECK(s.refused("a"));
  CHECK(s.refused_count() == 2);
  auto r = s.take_refusals();
  REQUIRE(r.size() == 1);
  CHECK(r[0].channels == std::vector<std::string>{"a", "b"});
  CHECK(r[0].error == "NOPERM no permissions");
  CHECK(r[0].retry_in == subscription_set::retry_initial);
  s.unsubscribe("a");
  s.take_commands();
  s.expire(clock_type::now() + std::chrono::minutes(1));
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "b"}});
  // A SUBSCRIBE answered before the refused one lines up: only the refused one's channels.
  std::optional<std::error_code> wc;
  s.subscribe("c", into(wc), far);
  CHECK(s.take_commands() == std::vector<command>{{"SUBSCRIBE", "c"}});
  auto cb = confirm("subscribe", "b");
  s.on_reply(cb);
  CHECK(s.take_recovered() == std::vector<std::string>{"b"});
  s.on_reply(refused);  // answers "c"
  REQUIRE(wc);
  CHECK(*wc == make_error_code(error::refused));
  CHECK(s.refused("c"));
  CHECK_FALSE(s.refused("b"));
}

}  // namespace test_subscription_set_unit
