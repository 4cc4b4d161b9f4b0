#include "core/names.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_names_unit {

using pushonce::compare_ids;
using pushonce::valid_name;

TEST_CASE("valid_name accepts 1-128 characters of [A-Za-z0-9._@-]") {
  CHECK(valid_name("alice"));
  CHECK(valid_name("a"));
  CHECK(valid_name("Bob.Smith_2@example-domain.org"));
  CHECK(valid_name("0123456789"));
  CHECK(valid_name(std::string(128, 'x')));
}

TEST_CASE("valid_name rejects empty, long and unsafe names") {
  CHECK_FALSE(valid_name(""));
  CHECK_FALSE(valid_name(std::string(129, 'x')));
  for (const char* bad :
       {"a b", "a{b", "a}b", "{u:x}", "a:b", "a/b", "a*b", "a\nb", "ä", "a\tb", "a\"b", "a,b"})
    CHECK_MESSAGE(!valid_name(bad), bad);
  CHECK_FALSE(valid_name(std::string_view("a\0b", 3)));
}

TEST_CASE("compare_ids compares decimal strings as numbers") {
  CHECK(compare_ids("1", "1") == 0);
  CHECK(compare_ids("1", "2") < 0);
  CHECK(compare_ids("2", "1") > 0);
  CHECK(compare_ids("9", "10") < 0);
  CHECK(compare_ids("10", "9") > 0);
  CHECK(compare_ids("99", "100") < 0);
  CHECK(compare_ids("4095", "4096") < 0);
  CHECK(compare_ids("69633", "69632") > 0);
}

TEST_CASE("compare_ids ignores leading zeros") {
  CHECK(compare_ids("099", "99") == 0);
  CHECK(compare_ids("0", "0000") == 0);
  CHECK(compare_ids("010", "9") > 0);
  CHECK(compare_ids("0009", "10") < 0);
}

TEST_CASE("compare_ids handles numbers beyond 2^64") {
  const std::string max64 = "18446744073709551615";  // 2^64 - 1
  const std::string over = "18446744073709551616";   // 2^64
  CHECK(compare_ids(max64, over) < 0);
  CHECK(compare_ids(over, max64) > 0);
  CHECK(compare_ids("123456789012345678901234567890", "123456789012345678901234567891") < 0);
  CHECK(compare_ids("1000000000000000000000000000000", "999999999999999999999999999999") > 0);
  CHECK(compare_ids("00" + over, over) == 0);
}

}  // namespace test_names_unit
