#include "core/log.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <stdexcept>
#include <string>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_log_unit {

namespace plog = pushonce::log;

TEST_CASE("parse_level") {
  CHECK(plog::parse_level("debug") == plog::level::debug);
  CHECK(plog::parse_level("info") == plog::level::info);
  CHECK(plog::parse_level("warn") == plog::level::warn);
  CHECK(plog::parse_level("error") == plog::level::error);
  CHECK_THROWS_AS(plog::parse_level("INFO"), std::invalid_argument);
  CHECK_THROWS_AS(plog::parse_level(""), std::invalid_argument);
  CHECK_THROWS_AS(plog::parse_level("warning"), std::invalid_argument);
}

TEST_CASE("set_level and current_level") {
  auto before = plog::current_level();
  plog::set_level(plog::level::error);
  CHECK(plog::current_level() == plog::level::error);
  plog::info("not printed {}", 1);  // below the level: no output, no crash
  plog::set_level(before);
  CHECK(plog::current_level() == before);
}

TEST_CASE("parse_format") {
  CHECK(plog::parse_format("text") == plog::format::text);
  CHECK(plog::parse_format("json") == plog::format::json);
  CHECK_THROWS_AS(plog::parse_format("JSON"), std::invalid_argument);
  CHECK_THROWS_AS(plog::parse_format(""), std::invalid_argument);
}

TEST_CASE("text lines: the old shape, fields appended as key=value") {
  const std::string t = "2026-11-23T10:00:00.123Z";
  CHECK(plog::format_line(plog::format::text, t, plog::level::info, "worker", "w1", "started",
                          {}) == "2026-11-23T10:00:00.123Z info  worker[w1]: started\n");
  CHECK(plog::format_line(plog::format::text, t, plog::level::error, "leader", "", "x", {}) ==
        "2026-11-23T10:00:00.123Z error leader: x\n");
  CHECK(plog::format_line(plog::format::text, t, plog::level::warn, "", "", "bare", {}) ==
        "2026-11-23T10:00:00.123Z warn  bare\n");
  plog::fields f{{"message_id", "17"}, {"user", "alice"}, {"offset", 7}};
  CHECK(plog::format_line(plog::format::text, t, plog::level::warn, "worker", "w1", "failed", f) ==
        "2026-11-23T10:00:00.123Z warn  worker[w1]: failed message_id=17 user=alice offset=7\n");
}

TEST_CASE("text lines stay one line; awkward field values are quoted") {
  const std::string t = "T";
  plog::fields f{{"user", "a b"}, {"k", "x=\"y\""}, {"e", ""}};
  CHECK(plog::format_line(plog::format::text, t, plog::level::info, "p", "i", "one\ntwo\r", f) ==
        "T info  p[i]: one\\ntwo\\r user=\"a b\" k=\"x=\\\"y\\\"\" e=\"\"\n");
}

TEST_CASE("json lines: one object per line with time, level, program, instance, message") {
  auto line = plog::format_line(plog::format::json, "2026-11-23T10:00:00.123Z", plog::level::info,
                                "gateway", "g1", "listening", {{"user", "bob"}, {"offset", 42}});
  CHECK(line ==
        "{\"time\":\"2026-11-23T10:00:00.123Z\",\"level\":\"info\",\"program\":\"gateway\","
        "\"instance\":\"g1\",\"message\":\"listening\",\"user\":\"bob\",\"offset\":42}\n");
  CHECK(line.find('\n') == line.size() - 1);
  auto v = boost::json::parse(line);
  REQUIRE(v.is_object());
  CHECK(v.at("level") == "info");
  CHECK(v.at("offset").as_int64() == 42);
}

TEST_CASE("json lines escape quotes, backslashes, control characters and keep UTF-8") {
  std::string nasty = "say \"hi\"\\ then\nnew line\ttab \x01 \xc3\xa9";
  auto line = plog::format_line(plog::format::json, "T", plog::level::warn, "worker", "w\"1", nasty,
                                {{"user", nasty}, {"k\"ey", "v"}});
  CHECK(line.find('\n') == line.size() - 1);  // the newline inside is escaped
  CHECK(line.find("\\\"hi\\\"") != std::string::npos);
  CHECK(line.find("\\\\ then") != std::string::npos);
  CHECK(line.find("\\n") != std::string::npos);
  CHECK(line.find("\\t") != std::string::npos);
  CHECK(line.find("\\u0001") != std::string::npos);
  auto v = boost::json::parse(line);  // and it is valid JSON that round-trips
  REQUIRE(v.is_object());
  CHECK(v.at("message") == nasty.c_str());
  CHECK(v.at("user") == nasty.c_str());
  CHECK(v.at("instance") == "w\"1");
  CHECK(v.at("k\"ey") == "v");
}

TEST_CASE("json lines without identity omit program and instance") {
  auto v = boost::json::parse(
      plog::format_line(plog::format::json, "T", plog::level::debug, "", "", "m", {}));
  CHECK_FALSE(v.as_object().contains("program"));
  CHECK_FALSE(v.as_object().contains("instance"));
  CHECK(v.at("level") == "debug");
}

TEST_CASE("text lines: control characters and line separators of user strings are escaped") {
  // A user id, queue name or message id that tries to end the line, forge another one, move
  // the terminal's cursor or hide what follows.
  using namespace std::string_literals;
  auto forged = "bob\n2026-11-23T10:00:00.000Z info  worker[w1]: ok\x1b[2K\r\b\x00\x7f\\n"s;
  forged +=
      "\xe2\x80\xa8"
      "x\xc2\x85"
      "y\xc3\xa9";  // U+2028, U+0085, then a plain é
  auto line = plog::format_line(plog::format::text, "T", plog::level::info, "gateway", "g1",
                                "hello from " + forged, {});
  CHECK(line.find('\n') == line.size() - 1);
  for (char c : line.substr(0, line.size() - 1)) {
    auto u = static_cast<unsigned char>(c);
    CHECK_MESSAGE((u >= 0x20 && u != 0x7f), "control byte ", int(u), " in ", line);
  }
  CHECK(line.find("\\x1b[2K") != std::string::npos);
  CHECK(line.find("\\x00") != std::string::npos);
  CHECK(line.find("\\\\n") != std::string::npos);  // a literal backslash-n stays apart from \n
  CHECK(line.find("\\u2028x\\u0085y\xc3\xa9") != std::string::npos);
}

}  // namespace test_log_unit
