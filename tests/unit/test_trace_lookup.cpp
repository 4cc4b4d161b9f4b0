#include "core/trace.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_trace_lookup_unit {

using namespace pushonce;

TEST_CASE("trace lookup: a message id is decimal digits") {
  auto t = trace_lookup_of("4096", std::nullopt);
  CHECK(t.error.empty());
  CHECK(t.id == "4096");
  CHECK_FALSE(t.key);
  CHECK_FALSE(trace_lookup_of("1234567890123456789", std::nullopt).error.empty());  // 19 digits
}

TEST_CASE("trace lookup: with --user the argument is the user's idempotency key") {
  auto t = trace_lookup_of("greeting-1", std::string("alice"));
  CHECK(t.error.empty());
  CHECK(t.id.empty());
  REQUIRE(t.key);
  CHECK(*t.key == "greeting-1");
  CHECK(t.user == "alice");
  // a key of digits is a key too when --user names its user
  auto digits = trace_lookup_of("42", std::string("bob"));
  REQUIRE(digits.key);
  CHECK(*digits.key == "42");
  CHECK_FALSE(trace_lookup_of("", std::string("bob")).error.empty());
}

TEST_CASE("trace lookup: a key without --user says how to trace it") {
  auto t = trace_lookup_of("greeting-1", std::nullopt);
  CHECK(t.id.empty());
  CHECK_FALSE(t.key);
  CHECK(t.error.find("message ids are decimal digits") != std::string::npos);
  CHECK(t.error.find("trace greeting-1 --user USER") != std::string::npos);
}

}  // namespace test_trace_lookup_unit
