#include "core/redis/reply.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <ostream>

#include "core/redis/error.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_reply_unit {

using pushonce::redis::reply;

namespace {

reply make(reply::type kind, std::string str = {}, long long integer = 0) {
  reply r;
  r.kind = kind;
  r.str = std::move(str);
  r.integer = integer;
  return r;
}

}  // namespace

TEST_CASE("as_int reads integer replies and decimal strings") {
  CHECK(make(reply::type::integer, "", 42).as_int() == 42);
  CHECK(make(reply::type::integer, "", -7).as_int() == -7);
  CHECK(make(reply::type::string, "12345").as_int() == 12345);
  CHECK(make(reply::type::string, "-3").as_int() == -3);
  CHECK(make(reply::type::status, "0").as_int() == 0);
  CHECK(make(reply::type::string, "9223372036854775807").as_int() == 9223372036854775807LL);
}

TEST_CASE("as_int refuses everything else") {
  CHECK_FALSE(make(reply::type::nil).as_int());
  CHECK_FALSE(make(reply::type::string, "").as_int());
  CHECK_FALSE(make(reply::type::string, "-").as_int());
  CHECK_FALSE(make(reply::type::string, "12a").as_int());
  CHECK_FALSE(make(reply::type::string, " 12").as_int());
  CHECK_FALSE(make(reply::type::string, "+12").as_int());
  CHECK_FALSE(make(reply::type::string, "1.5").as_int());
  CHECK_FALSE(make(reply::type::string, "99999999999999999999").as_int());  // overflow
  CHECK_FALSE(make(reply::type::error, "12").as_int());
  CHECK_FALSE(make(reply::type::array).as_int());
}

TEST_CASE("error_code and error_message split an error reply") {
  reply e = reply::make_error("already_queued alice is in queue default");
  CHECK(e.is_error());
  CHECK(e.error_code() == "already_queued");
  CHECK(e.error_message() == "alice is in queue default");

  reply noscript = reply::make_error("NOSCRIPT No matching script. Please use EVAL.");
  CHECK(noscript.error_code() == "NOSCRIPT");
  CHECK(noscript.error_message() == "No matching script. Please use EVAL.");

  reply bare = reply::make_error("fenced");
  CHECK(bare.error_code() == "fenced");
  CHECK(bare.error_message() == "");

  CHECK(make(reply::type::string, "not an error").error_code() == "");
  CHECK(make(reply::type::string, "not an error").error_message() == "");
}

TEST_CASE("kind predicates and at()") {
  reply arr = make(reply::type::array);
  arr.elements.push_back(make(reply::type::string, "won"));
  arr.elements.push_back(make(reply::type::integer, "", 1));
  CHECK(arr.is_array());
  CHECK(arr.at(0).is_string());
  CHECK(arr.at(0).str == "won");
  CHECK(arr.at(1).as_int() == 1);
  CHECK(arr.at(2).is_nil());
  CHECK(make(reply::type::string, "x").at(0).is_nil());
  CHECK(reply{}.is_nil());
  CHECK(make(reply::type::status, "OK").is_string());
}

TEST_CASE("redis error codes") {
  using pushonce::redis::error;
  std::error_code ec = error::timeout;
  CHECK(ec.category().name() == std::string("pushonce.redis"));
  CHECK(ec.value() == 1);
  CHECK_FALSE(ec.message().empty());
  CHECK(std::error_code(error::stopped) != std::error_code(error::timeout));
  CHECK(pushonce::redis::make_error_code(error::queue_full).message() !=
        pushonce::redis::make_error_code(error::protocol).message());
}

TEST_CASE("field: the value after a name in a flat name/value array") {
  auto entry = make(reply::type::array);
  entry.elements = {make(reply::type::string, "m"), make(reply::type::string, "line"),
                    make(reply::type::string, "length"), make(reply::type::integer, "", 7),
                    make(reply::type::string, "dangling")};
  CHECK(entry.field("m").str == "line");
  CHECK(entry.field("length").integer == 7);
  CHECK(entry.field("absent").is_nil());
  CHECK(entry.field("dangling").is_nil());  // a name without a value
  CHECK(entry.field("line").is_nil());      // values are not names
  CHECK(make(reply::type::string, "m").field("m").is_nil());
}

}  // namespace test_reply_unit
