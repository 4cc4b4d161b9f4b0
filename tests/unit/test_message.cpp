#include "core/message.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <boost/json.hpp>

using namespace pushonce;

TEST_CASE("bus message: parse a message of assign.lua / publish.lua") {
  const std::string text =
      R"({"id":"40976","user":"alice","kind":"assignment","data":{"queue":"default","resource":"r1","meta":null,"accept_by":null},"ts":1732200000000,"src":"q:default"})";
  auto m = parse_bus_message(text);
  REQUIRE(m);
  CHECK(m->id == "40976");
  CHECK(m->user == "alice");
  CHECK(m->kind == "assignment");
  CHECK(m->ts == 1732200000000);
  CHECK(m->src == "q:default");
  CHECK(m->raw == text);
  CHECK(boost::json::parse(m->data_json).at("resource") == "r1");
}

TEST_CASE("bus message: what is not one is refused with a reason") {
  std::string why;
  CHECK_FALSE(parse_bus_message("not json", &why));
  CHECK(why == "not a JSON object");
  CHECK_FALSE(
      parse_bus_message(R"({"id":"12a","user":"a","kind":"message","data":1,"ts":1})", &why));
  CHECK(why == "missing or non-numeric id");
  CHECK_FALSE(
      parse_bus_message(R"({"id":"1","user":"{u:x}","kind":"message","data":1,"ts":1})", &why));
  CHECK(why == "missing or bad user");
  CHECK_FALSE(parse_bus_message(R"({"id":"1","user":"a","kind":"message","ts":1})", &why));
  CHECK(why == "missing data");
  CHECK_FALSE(parse_bus_message(R"({"id":"1","user":"a","kind":"message","data":1})", &why));
  CHECK(why == "missing ts");
  CHECK_FALSE(parse_bus_message(R"([1,2])"));
}

TEST_CASE("frame: head + offset + tail is the browser frame of PROTOCOL.md") {
  bus_message m;
  m.id = "8192";
  m.user = "bob";
  m.kind = "message";
  m.data_json = R"({"text":"hi \"there\"","n":[1,{}]})";
  m.ts = 1732200000123;
  auto f = render_frame(m);
  auto frame = f.head + "17" + f.tail;
  auto v = boost::json::parse(frame).as_object();
  CHECK(v.at("type") == "message");
  CHECK(v.at("id") == "8192");  // a string of digits
  CHECK(v.at("offset") == 17);
  CHECK(v.at("kind") == "message");
  CHECK(v.at("ts") == 1732200000123);
  CHECK(boost::json::serialize(v.at("data")) == m.data_json);  // spliced verbatim
  CHECK(frame.rfind(R"({"type":"message","id":"8192","offset":17,)", 0) == 0);
}
