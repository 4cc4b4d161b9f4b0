// pushonce-bench's frames and bodies (bench/wire.hpp), the floor stand-in's decisions
// (bench/floor_logic.hpp) and the report's verdict (bench/report.hpp).

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "bench/floor_logic.hpp"
#include "bench/report.hpp"
#include "bench/wire.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bench_wire_unit {

using namespace pushonce::bench;
namespace json = boost::json;

TEST_CASE("bench wire: the gateway's frames") {
  auto m = parse_frame(
      R"({"type":"message","id":"4097","offset":3,"kind":"message","data":{"r":"ab","s":12,"t":99},"ts":1})");
  CHECK(m.type == server_frame::kind::message);
  CHECK(m.offset == 3);
  CHECK(m.seq == 12);
  CHECK(m.due == 99);
  CHECK(m.run == "ab");
  auto w = parse_frame(
      R"({"type":"welcome","user":"u","session":"s","epoch":"E1","offset":5,"recovered":false})");
  CHECK(w.type == server_frame::kind::welcome);
  CHECK(w.epoch == "E1");
  CHECK(w.offset == 5);
  CHECK_FALSE(w.recovered);
  CHECK(parse_frame(R"({"type":"error","code":"rate_limited"})").code == "rate_limited");
  CHECK(parse_frame(R"({"type":"pong"})").type == server_frame::kind::other);
  CHECK(parse_frame("not json").type == server_frame::kind::bad);
  CHECK(parse_frame(R"({"type":"message","offset":1,"data":"text"})").seq == -1);
}

TEST_CASE("bench wire: hello, publish body and its answer") {
  CHECK(json::parse(hello_frame("u1", "", nullptr, 0)) ==
        json::parse(R"({"op":"hello","user":"u1"})"));
  std::string epoch = "E";
  CHECK(json::parse(hello_frame("u1", "TOKEN", &epoch, 7)) ==
        json::parse(R"({"op":"hello","token":"TOKEN","since":{"epoch":"E","offset":7}})"));
  auto body = json::parse(publish_body("pb-", "run1", 3, 4, 2, 1234));
  auto& msgs = body.at("messages").as_array();
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[0] ==
        json::parse(R"({"user":"pb-1","data":{"r":"run1","s":4,"t":1234},"id":"run1-4"})"));
  CHECK(msgs[1].at("user") == "pb-2");
  auto bare = json::parse(publish_body("pb-", "run1", 3, 4, 1, 1234, false));
  CHECK(bare.at("messages").as_array()[0] ==
        json::parse(R"({"user":"pb-1","data":{"r":"run1","s":4,"t":1234}})"));
  auto ok = parse_publish_reply(R"({"results":[{"id":"1","duplicate":false},{"error":"x"}]})", 2);
  REQUIRE(ok);
  CHECK((*ok)[0]);
  CHECK_FALSE((*ok)[1]);
  CHECK_FALSE(parse_publish_reply(R"({"results":[]})", 2));
  CHECK_FALSE(parse_publish_reply("oops", 1));
}

TEST_CASE("bench floor: ids and offsets from memory, and a duplicate every Nth frame") {
  floor_logic f(3);
  auto out = f.publish(publish_body("u", "r", 2, 0, 4, 0), 1000);
  CHECK(out.status == 200);
  REQUIRE(out.deliveries.size() == 4);
  CHECK(out.deliveries[0].user == "u0");
  CHECK_FALSE(out.deliveries[0].twice);
  CHECK(out.deliveries[2].twice);
  auto third = parse_frame(out.deliveries[2].frame);
  CHECK(third.offset == 2);  // u0's second message
  CHECK(third.seq == 2);
  CHECK(json::parse(out.body).at("results").as_array().size() == 4);
  CHECK(parse_frame(f.welcome("u1")).offset == 2);
  CHECK(f.publish("{}", 0).status == 400);
  CHECK(f.publish("nope", 0).status == 400);
}

TEST_CASE("bench report: the exit status follows the verdict") {
  run_report r;
  r.mode = "fanout";
  r.sessions = 2;
  r.opened = 2;
  CHECK(r.exit_status() == 0);
  r.frames.duplicates = 1;
  CHECK(r.exit_status() == 1);
  CHECK(r.to_json().at("duplicates").as_uint64() == 1);
  CHECK_FALSE(r.to_json().at("ok").as_bool());
  r.frames.duplicates = 0;
  r.ledger.lost = 1;
  CHECK(r.exit_status() == 1);
  r.ledger.lost = 0;
  r.ledger.announced_missing = 5;  // announced by recovered:false: reported, not a failure
  CHECK(r.exit_status() == 0);
  r.opened = 0;
  CHECK(r.exit_status() == 1);
  CHECK(r.table().find("FAILED") != std::string::npos);
}

}  // namespace test_bench_wire_unit
