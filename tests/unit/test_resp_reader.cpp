#include "core/redis/resp_reader.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <ostream>
#include <string>
#include <vector>

#include "core/redis/error.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_resp_reader_unit {

using pushonce::redis::reply;
using pushonce::redis::resp_reader;

namespace {

// A reply as short text: 5, "s", +ok, -ERR x, nil, [a, b].
std::string show(const reply& r) {
  switch (r.kind) {
    case reply::type::nil:
      return "nil";
    case reply::type::integer:
      return std::to_string(r.integer);
    case reply::type::string:
      return '"' + r.str + '"';
    case reply::type::status:
      return '+' + r.str;
    case reply::type::error:
      return '-' + r.str;
    case reply::type::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < r.elements.size(); ++i)
        out += (i ? ", " : "") + show(r.elements[i]);
      return out + "]";
    }
  }
  return "?";
}

struct read_outcome {
  std::vector<std::string> replies;
  bool failed = false;
  std::string why;
};

// Feeds `wire` in pieces of `step` bytes (0: all at once), taking replies after each piece.
read_outcome decode(const std::string& wire, std::size_t step = 0) {
  resp_reader reader;
  read_outcome o;
  if (step == 0) step = wire.size() ? wire.size() : 1;
  for (std::size_t at = 0; at < wire.size() && !o.failed; at += step) {
    if (!reader.feed(wire.data() + at, std::min(step, wire.size() - at))) {
      o.failed = true;
      break;
    }
    for (;;) {
      reply r;
      std::error_code ec;
      if (!reader.take(r, ec)) break;
      if (ec) {
        CHECK(ec == pushonce::redis::error::protocol);
        o.failed = true;
        break;
      }
      o.replies.push_back(show(r));
    }
  }
  if (o.failed) o.why = reader.error_text();
  return o;
}

using namespace std::string_literals;

const std::string pipelined =
    "+OK\r\n-ERR unknown command\r\n:42\r\n:-7\r\n$5\r\nhello\r\n$0\r\n\r\n$-1\r\n*-1\r\n"
    "*0\r\n*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n+x\r\n$6\r\na\r\nb\0c\r\n"s;
const std::vector<std::string> pipelined_replies = {"+OK",
                                                    "-ERR unknown command",
                                                    "42",
                                                    "-7",
                                                    "\"hello\"",
                                                    "\"\"",
                                                    "nil",
                                                    "nil",
                                                    "[]",
                                                    "[1, [\"a\", nil], +x]",
                                                    std::string("\"a\r\nb\0c\"", 8)};

}  // namespace

TEST_CASE("resp_reader: every RESP2 type, pipelined, in order") {
  auto o = decode(pipelined);
  CHECK_FALSE(o.failed);
  CHECK(o.replies == pipelined_replies);
}

TEST_CASE("resp_reader: the same replies when the bytes arrive split at every position") {
  for (std::size_t cut = 1; cut < pipelined.size(); ++cut) {
    resp_reader reader;
    std::vector<std::string> got;
    auto drain = [&] {
      reply r;
      std::error_code ec;
      while (reader.take(r, ec)) {
        REQUIRE_FALSE(ec);
        got.push_back(show(r));
      }
    };
    REQUIRE(reader.feed(pipelined.substr(0, cut)));
    drain();
    REQUIRE(reader.feed(pipelined.substr(cut)));
    drain();
    CHECK_MESSAGE(got == pipelined_replies, "cut at byte " << cut);
  }
  // and one byte at a time
  auto o = decode(pipelined, 1);
  CHECK_FALSE(o.failed);
  CHECK(o.replies == pipelined_replies);
}

TEST_CASE("resp_reader: a partial reply is not taken until its last byte") {
  resp_reader reader;
  reply r;
  std::error_code ec;
  REQUIRE(reader.feed("$5\r\nhel"));
  CHECK_FALSE(reader.take(r, ec));
  REQUIRE(reader.feed("lo\r"));
  CHECK_FALSE(reader.take(r, ec));
  REQUIRE(reader.feed("\n"));
  REQUIRE(reader.take(r, ec));
  CHECK_FALSE(ec);
  CHECK(show(r) == "\"hello\"");
  CHECK_FALSE(reader.take(r, ec));
}

TEST_CASE("resp_reader: a huge announced array reserves little (fuzz regression)") {
  // Found by fuzz_resp: `*33026026` once made the reader reserve 33 million replies (2.4 GB)
  // before a single element arrived.
  resp_reader reader;
  REQUIRE(reader.feed("*33026026\r\n:1\r\n:2\r\n"));
  reply r;
  std::error_code ec;
  CHECK_FALSE(reader.take(r, ec));  // incomplete: no error, no reply, no 2.4 GB
  CHECK_FALSE(reader.failed());
  // The biggest count an int holds is still only reserved up to max_reserve.
  auto o = decode("*2147483647\r\n:1\r\n");
  CHECK_FALSE(o.failed);
  CHECK(o.replies.empty());
  // A complete array bigger than the reserve grows as its elements arrive.
  std::string wire = "*3000\r\n";
  for (int i = 0; i < 3000; ++i) wire += ":" + std::to_string(i) + "\r\n";
  resp_reader big;
  REQUIRE(big.feed(wire));
  REQUIRE(big.take(r, ec));
  CHECK_FALSE(ec);
  REQUIRE(r.elements.size() == 3000);
  CHECK(r.elements[2999].integer == 2999);
}

TEST_CASE("resp_reader: counts and lengths that do not fit are errors or nil, never a crash") {
  // Debian's hiredis 0.14.1 refuses a count over INT_MAX or under -1 itself; our object
  // functions refuse a negative count and an element past the count as a second guard
  // (upstream 0.14 truncates the count to an int and would trip its own assert).
  for (const char* wire : {"*2147483648\r\n:1\r\n", "*4294967296\r\n:1\r\n", "*-5\r\n"}) {
    auto o = decode(wire);
    CHECK_MESSAGE(o.failed, wire);
    CHECK_MESSAGE(o.why.find("out of range") != std::string::npos, wire << ": " << o.why);
  }
  // -1 is the nil array and the nil bulk string.
  CHECK(decode("*-1\r\n$-1\r\n").replies == std::vector<std::string>{"nil", "nil"});
  // A bulk length far beyond the bytes sent: waits, reserves nothing.
  resp_reader reader;
  REQUIRE(reader.feed("$9223372036854775807\r\nabc"));
  reply r;
  std::error_code ec;
  CHECK_FALSE(reader.take(r, ec));
  CHECK_FALSE(reader.failed());
}

TEST_CASE("resp_reader: protocol errors stick until reset") {
  auto o = decode("+OK\r\n?what\r\n:1\r\n");
  CHECK(o.replies == std::vector<std::string>{"+OK"});
  CHECK(o.failed);
  CHECK(o.why.find("Protocol error") != std::string::npos);

  resp_reader reader;
  REQUIRE(reader.feed("!\r\n"));
  reply r;
  std::error_code ec;
  REQUIRE(reader.take(r, ec));
  CHECK(ec == pushonce::redis::error::protocol);
  CHECK(reader.failed());
  CHECK_FALSE(reader.feed(":1\r\n"));
  reader.reset();
  CHECK_FALSE(reader.failed());
  CHECK(reader.error_text().empty());
  REQUIRE(reader.feed(":1\r\n"));
  ec.clear();
  REQUIRE(reader.take(r, ec));
  CHECK_FALSE(ec);
  CHECK(r.integer == 1);
}

TEST_CASE("resp_reader: arrays nested 8 deep parse, deeper ones are a protocol error") {
  std::string eight = "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n";
  CHECK(decode(eight).replies == std::vector<std::string>{"[[[[[[[[1]]]]]]]]"});
  auto o = decode("*1\r\n" + eight);
  CHECK(o.failed);
  CHECK(o.why.find("depth") != std::string::npos);
  // An error inside a partly built nested array frees what was built (ASan would see a leak).
  CHECK(decode("*2\r\n*2\r\n:1\r\n?\r\n").failed);
}

}  // namespace test_resp_reader_unit
