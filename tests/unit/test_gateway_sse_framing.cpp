#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <string>

#include "gateway/protocol/protocol.hpp"
#include "gateway/session/sse_framing.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_sse_framing_unit {

using namespace pushonce::gateway;
namespace json = boost::json;

TEST_CASE("sse framing: a message is an event with id EPOCH:OFFSET and the frame as data") {
  std::string frame = R"({"type":"message","id":"m1","offset":42,"data":{"a":1},"ts":5})";
  CHECK(sse_frame_type(frame) == "message");
  CHECK(render_sse_event(frame, "ep1") == "id: ep1:42\ndata: " + frame + "\n\n");
}

TEST_CASE("sse framing: other frames are named events by their type") {
  auto w = render_welcome("alice", "s1", "ep1", 3, true);
  CHECK(render_sse_event(w, "ep1") == "event: welcome\ndata: " + w + "\n\n");
  auto p = render_position("default", 7);
  CHECK(render_sse_event(p, "ep1") == "event: position\ndata: " + p + "\n\n");
  auto e = render_error(pushonce::errc::bad_request, "no", "join");
  CHECK(render_sse_event(e, "ep1").rfind("event: error\ndata: ", 0) == 0);
  CHECK(sse_frame_type("not json") == "");
  CHECK(render_sse_event("x", "ep") == "data: x\n\n");
}

TEST_CASE("sse framing: a line break in a frame cannot start a field") {
  std::string frame = "{\"type\":\"position\",\"x\":1}\nid: 9\r\nevent: welcome\rdata";
  auto out = render_sse_event(frame, "ep");
  CHECK(out ==
        "event: position\ndata: {\"type\":\"position\",\"x\":1}\ndata: id: 9\ndata: event: "
        "welcome\ndata: data\n\n");
}

TEST_CASE("sse framing: the close event") {
  auto out = render_sse_close(1008, "token expired");
  REQUIRE(out.rfind("event: error\ndata: ", 0) == 0);
  auto data = out.substr(19, out.size() - 19 - 2);
  auto o = json::parse(data).as_object();
  CHECK(o.at("type") == "error");
  CHECK(o.at("code") == "closed");
  CHECK(o.at("close").to_number<int>() == 1008);
  CHECK(o.at("message") == "token expired");
  CHECK(out.substr(out.size() - 2) == "\n\n");
}

TEST_CASE("sse framing: event ids") {
  auto s = parse_sse_event_id("abc123:17");
  REQUIRE(s);
  CHECK(s->epoch == "abc123");
  CHECK(s->offset == 17);
  CHECK(parse_sse_event_id("abc:0")->offset == 0);
  CHECK_FALSE(parse_sse_event_id(""));
  CHECK_FALSE(parse_sse_event_id("abc"));
  CHECK_FALSE(parse_sse_event_id(":5"));
  CHECK_FALSE(parse_sse_event_id("abc:"));
  CHECK_FALSE(parse_sse_event_id("abc:-1"));
  CHECK_FALSE(parse_sse_event_id("abc:1x"));
  CHECK_FALSE(parse_sse_event_id("a:b:1"));
  CHECK_FALSE(parse_sse_event_id("a b:1"));
  CHECK_FALSE(parse_sse_event_id("abc:99999999999999999999999"));
}

TEST_CASE("sse framing: the GET /sse query") {
  auto q = parse_sse_query("/sse?token=a.b-c_d&since=ep%3A5", "");
  CHECK(q.error.empty());
  CHECK(q.hello.token == "a.b-c_d");
  CHECK_FALSE(q.hello.user);
  REQUIRE(q.hello.since);
  CHECK(q.hello.since->epoch == "ep");
  CHECK(q.hello.since->offset == 5);

  auto header_wins = parse_sse_query("/sse?user=al%20ice&since=ep:5", "ep2:9");
  CHECK(header_wins.hello.user == "al ice");
  CHECK(header_wins.hello.since->epoch == "ep2");
  CHECK(header_wins.hello.since->offset == 9);

  CHECK_FALSE(parse_sse_query("/sse?user=u&since=", "").hello.since);
  CHECK_FALSE(parse_sse_query("/sse", "").error.size());
  CHECK_FALSE(parse_sse_query("/sse?user=u&since=bad", "").error.empty());
  CHECK_FALSE(parse_sse_query("/sse?user=u", "bad").error.empty());

  // The hello the session runs.
  auto h = json::parse(sse_hello_frame(q.hello)).as_object();
  CHECK(h.at("op") == "hello");
  CHECK(h.at("token") == "a.b-c_d");
  CHECK(h.at("since").at("epoch") == "ep");
  CHECK(h.at("since").at("offset").to_number<long long>() == 5);
  auto parsed = parse_client_frame(sse_hello_frame(q.hello));
  REQUIRE(std::holds_alternative<client_op>(parsed));
  CHECK(std::holds_alternative<hello_op>(std::get<client_op>(parsed)));
}

TEST_CASE("sse framing: the POST /sse/op body") {
  auto r = parse_sse_op(R"({"session":"s1","op":"join","queue":"q","user":"u"})");
  CHECK(r.error.empty());
  CHECK(r.session == "s1");
  CHECK(r.user == "u");
  CHECK(parse_sse_op(R"({"session":"s1","op":"ping"})").error.empty());
  CHECK_FALSE(parse_sse_op(R"({"session":"s1","op":"ping"})").user);
  CHECK_FALSE(parse_sse_op("{nope").error.empty());
  CHECK_FALSE(parse_sse_op("[1]").error.empty());
  CHECK_FALSE(parse_sse_op(R"({"op":"ping"})").error.empty());
  CHECK_FALSE(parse_sse_op(R"({"session":"","op":"ping"})").error.empty());
  CHECK_FALSE(parse_sse_op(R"({"session":"s","op":1})").error.empty());
  CHECK_FALSE(parse_sse_op(R"({"session":"s","op":"ping","user":5})").error.empty());
}

TEST_CASE("sse framing: bearer tokens") {
  CHECK(sse_bearer_token("Bearer abc") == "abc");
  CHECK(sse_bearer_token("bearer  abc") == "abc");
  CHECK_FALSE(sse_bearer_token("Basic abc"));
  CHECK_FALSE(sse_bearer_token("Bearer "));
  CHECK_FALSE(sse_bearer_token(""));
}

}  // namespace test_gateway_sse_framing_unit
