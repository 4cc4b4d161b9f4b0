#include "core/outcome.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/system/system_error.hpp>
#include <string>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_outcome_unit {

using namespace pushonce;

TEST_CASE("outcome: a value or a failure with its errc and message") {
  outcome<long long> ok = 7;
  REQUIRE(ok);
  CHECK(ok.value() == 7);

  outcome<long long> refused = failure{errc::not_queued, "ann is not in queue q"};
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == errc::not_queued);
  CHECK(refused.error().message == "ann is not in queue q");

  outcome<std::string> text = std::string("x");  // a string value is a value, not a failure
  CHECK(text);
  outcome<none> done = none{};
  CHECK(done);
}

TEST_CASE("outcome: value() of a failure throws its errc (a caller that did not check)") {
  outcome<int> refused = failure{errc::fenced, "newer leader"};
  try {
    (void)refused.value();
    FAIL("value() of a failure returned");
  } catch (const boost::system::system_error& e) {
    CHECK(e.code() == make_error_code(errc::fenced));
    CHECK(std::string(e.what()).find("newer leader") != std::string::npos);
  }
}

}  // namespace test_outcome_unit
