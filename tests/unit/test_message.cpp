#include "core/message.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <boost/json.hpp>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_message_unit {

using namespace pushonce;

namespace {
const std::string assignment =
    R"({"id":"40976","user":"alice","src":"q:default","kind":"assignment","data":{"queue":"default","resource":"r1","meta":null,"accept_by":null},"ts":1732200000000})";
}

TEST_CASE("bus message: the scripts' layout is read by the scan; the tail is its suffix") {
  auto m = parse_bus_message(assignment);
  REQUIRE(m);
  CHECK(m->id == "40976");
  CHECK(m->user == "alice");
  CHECK(m->src == "q:default");
  CHECK(m->raw == assignment);
  CHECK(
      m->tail ==
      R"(,"kind":"assignment","data":{"queue":"default","resource":"r1","meta":null,"accept_by":null},"ts":1732200000000})");
  CHECK(assignment.substr(assignment.size() - m->tail.size()) == m->tail);
  CHECK(m->ts == 1732200000000);
}

TEST_CASE("bus message: the Boost.JSON fallback gives the same tail as the scan") {
  // The same message as the scripts write it, and in other layouts only the fallback reads.
  const std::string scripts =
      R"({"id":"8192","user":"bob","src":"bus:0","kind":"message","data":{"a":[1,{}],"s":"x\"y"},"ts":1700000000000})";
  const std::string reordered =
      R"({"kind":"message","ts":1700000000000,"data":{"a":[1,{}],"s":"x\"y"},"user":"bob","id":"8192","src":"bus:0"})";
  const std::string spaced =
      R"({ "id" : "8192", "user" : "bob", "src" : "bus:0", "kind" : "message", "data" : {"a": [1, {}], "s": "x\"y"}, "ts" : 1700000000000 })";
  auto a = parse_bus_message(scripts);
  auto b = parse_bus_message(reordered);
  auto c = parse_bus_message(spaced);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(a->tail == b->tail);
  CHECK(a->tail == c->tail);
  CHECK(a->ts == 1700000000000);
  CHECK(b->ts == 1700000000000);
  CHECK(c->ts == 1700000000000);
  CHECK(b->id == "8192");
  CHECK(b->user == "bob");
  CHECK(b->src == "bus:0");
  CHECK(b->raw == reordered);
  // And both tails render the same frame, which is valid JSON.
  CHECK(render_frame(*a, 3) == render_frame(*b, 3));
  auto v = boost::json::parse(render_frame(*b, 3)).as_object();
  CHECK(v.at("data").at("s") == "x\"y");

  // Without src (an older writer): the fallback reads it, src empty.
  auto d = parse_bus_message(R"({"id":"1","user":"a","kind":"message","data":1,"ts":5})");
  REQUIRE(d);
  CHECK(d->src.empty());
  CHECK(d->tail == R"(,"kind":"message","data":1,"ts":5})");
}

TEST_CASE("bus message: a scan-shaped text that is not quite the layout falls back safely") {
  // A tail not ending in ,"ts":<digits>}: the scan refuses, the fallback decides.
  auto m = parse_bus_message(
      R"({"id":"1","user":"a","src":"bus:0","kind":"message","data":1,"ts":"x"})");
  CHECK_FALSE(m);
  // A bad user in the scan layout is refused by both.
  std::string why;
  CHECK_FALSE(parse_bus_message(
      R"({"id":"1","user":"{u:x}","src":"bus:0","kind":"message","data":1,"ts":1})", &why));
  CHECK(why == "missing or bad user");
  // Over 15 digits in the scan layout: not read by the scan; the fallback refuses it.
  CHECK_FALSE(parse_bus_message(
      R"({"id":"1","user":"a","src":"bus:0","kind":"message","data":1,"ts":12345678901234567890})"));
}

TEST_CASE("bus message: what is not one is refused with a reason") {
  std::string why;
  CHECK_FALSE(parse_bus_message("not json", &why));
  CHECK(why == "not a JSON object");
  CHECK_FALSE(
      parse_bus_message(R"({"id":"12a","user":"a","kind":"message","data":1,"ts":1})", &why));
  CHECK(why == "missing or non-numeric id");
  // Ids beyond 2^53 are none the scripts write (and would name another record bucket in
  // claim.lua's doubles than in C++): refused in both layouts; 2^53 itself is read.
  for (const char* id : {"9007199254740993", "12345678901234567", "99999999999999999999"}) {
    CAPTURE(id);
    CHECK_FALSE(
        parse_bus_message(std::string(R"({"id":")") + id +
                              R"(","user":"a","src":"bus:0","kind":"message","data":1,"ts":1})",
                          &why));
    CHECK(why == "id out of range (more than 2^53)");
  }
  CHECK(parse_bus_message(
      R"({"id":"9007199254740992","user":"a","src":"bus:0","kind":"message","data":1,"ts":1})"));
  CHECK_FALSE(
      parse_bus_message(R"({"id":"1","user":"{u:x}","kind":"message","data":1,"ts":1})", &why));
  CHECK(why == "missing or bad user");
  CHECK_FALSE(parse_bus_message(R"({"id":"1","user":"a","kind":"message","ts":1})", &why));
  CHECK(why == "missing data");
  CHECK_FALSE(parse_bus_message(R"({"id":"1","user":"a","kind":"message","data":1})", &why));
  CHECK(why == "missing ts");
  CHECK_FALSE(parse_bus_message(R"({"id":"1","user":"a","data":1,"ts":1})", &why));
  CHECK(why == "missing kind");
  CHECK_FALSE(parse_bus_message(R"([1,2])"));
  CHECK_FALSE(parse_bus_message(""));
}

TEST_CASE("bus message: a ts that is no whole number of ms is refused, never thrown") {
  // These run in the worker's bus and sweeper loops: an exception there ended the sweeper.
  for (const char* ts : {"1.5", "-1", "1e300", "18446744073709551616"}) {
    std::string text =
        std::string(R"({"user":"a","id":"1","kind":"message","data":1,"ts":)") + ts + "}";
    std::string why;
    std::optional<pushonce::bus_message> m;
    CHECK_NOTHROW(m = parse_bus_message(text, &why));
    CHECK_FALSE(m);
    CHECK(why == "ts is not a whole non-negative number of ms");
  }
  CHECK(parse_bus_message(R"({"user":"a","id":"1","kind":"message","data":1,"ts":2.0})"));
}

TEST_CASE("split_bus_payload: one message per line; empty lines skipped") {
  CHECK(split_bus_payload("").empty());
  CHECK(split_bus_payload("\n\n").empty());
  auto one = split_bus_payload(assignment);
  REQUIRE(one.size() == 1);
  CHECK(one[0] == assignment);
  auto three = split_bus_payload("a\nbb\n\nccc\n");
  REQUIRE(three.size() == 3);
  CHECK(three[0] == "a");
  CHECK(three[1] == "bb");
  CHECK(three[2] == "ccc");
  // Lines of a publish.lua payload parse one by one.
  auto payload = assignment + "\n" + assignment;
  for (auto line : split_bus_payload(payload)) CHECK(parse_bus_message(line));
}

TEST_CASE("frame: render_frame is the browser frame of docs/protocol.md (what claim.lua writes)") {
  auto m = parse_bus_message(
      R"({"id":"8192","user":"bob","src":"bus:0","kind":"message","data":{"text":"hi \"there\"","n":[1,{}]},"ts":1732200000123})");
  REQUIRE(m);
  auto frame = render_frame(*m, 17);
  CHECK(
      frame ==
      R"({"type":"message","id":"8192","offset":17,"kind":"message","data":{"text":"hi \"there\"","n":[1,{}]},"ts":1732200000123})");
  auto v = boost::json::parse(frame).as_object();
  CHECK(v.at("type") == "message");
  CHECK(v.at("id") == "8192");  // a string of digits
  CHECK(v.at("offset") == 17);
  CHECK(v.at("kind") == "message");
  CHECK(v.at("ts") == 1732200000123);
  CHECK(boost::json::serialize(v.at("data")) == R"({"text":"hi \"there\"","n":[1,{}]})");
}

TEST_CASE("with_publish_time: the same message, published at another time") {
  auto m = parse_bus_message(
      R"({"id":"8192","user":"bob","src":"bus:0","kind":"message","data":{"ts":1},"ts":17})");
  REQUIRE(m);
  auto line = with_publish_time(*m, 1800000000000);
  CHECK(
      line ==
      R"({"id":"8192","user":"bob","src":"bus:0","kind":"message","data":{"ts":1},"ts":1800000000000})");
  auto again = parse_bus_message(line);
  REQUIRE(again);
  CHECK(again->ts == 1800000000000);
  CHECK(again->id == "8192");
  // Another layout (read by the fallback) comes back in the scripts' layout; no src, none.
  auto other = parse_bus_message(R"({"ts":5,"data":[1],"kind":"k","user":"a","id":"1"})");
  REQUIRE(other);
  CHECK(with_publish_time(*other, 6) == R"({"id":"1","user":"a","kind":"k","data":[1],"ts":6})");
}

}  // namespace test_message_unit
