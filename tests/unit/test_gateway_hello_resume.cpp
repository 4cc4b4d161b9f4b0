// hello's resume decision (gateway/session/hello_resume.hpp): where the session starts and
// what its welcome says, for every edge of since, acked, latest and a trimmed inbox.

#include <doctest/doctest.h>

#include <optional>

#include "gateway/session/hello_resume.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_hello_resume_unit {

using namespace pushonce::gateway;

namespace {

std::optional<since_position> since_of(const char* epoch, long long offset) {
  return since_position{epoch, offset};
}

}  // namespace

TEST_CASE("hello resume: no since starts at acked and is recovered") {
  hello_resume r(std::nullopt);
  CHECK_FALSE(r.session_args());
  auto plan = r.on_opened("E", 10, 7, false);
  CHECK(plan.start == 7);
  CHECK(plan.recovered);
  auto w = r.on_first_page(8);
  CHECK(w.recovered);
  CHECK(w.skip_to == 7);
}

TEST_CASE("hello resume: acked is never beyond latest") {
  hello_resume r(std::nullopt);
  CHECK(r.on_opened("E", 4, 9, false).start == 4);
  CHECK(r.on_first_page(std::nullopt).recovered);
}

TEST_CASE("hello resume: session.lua is given since as it came") {
  hello_resume r(since_of("E", 5));
  auto args = r.session_args();
  REQUIRE(args);
  CHECK(args->epoch == "E");
  CHECK(args->offset == 5);
  CHECK_FALSE(args->offsets_went_back);
}

TEST_CASE("hello resume: since in the epoch in force wins over acked, either way") {
  SUBCASE("since below acked: the client lost what it acked, replay from since") {
    hello_resume r(since_of("E", 3));
    auto plan = r.on_opened("E", 10, 8, false);
    CHECK(plan.start == 3);
    CHECK(plan.recovered);
    CHECK(r.on_first_page(4).recovered);
  }
  SUBCASE("since above acked: what the client holds is not sent again") {
    hello_resume r(since_of("E", 9));
    auto plan = r.on_opened("E", 10, 2, false);
    CHECK(plan.start == 9);
    CHECK(r.on_first_page(10).recovered);
  }
  SUBCASE("since at latest: nothing to replay") {
    hello_resume r(since_of("E", 10));
    CHECK(r.on_opened("E", 10, 0, false).start == 10);
    auto w = r.on_first_page(std::nullopt);
    CHECK(w.recovered);
    CHECK(w.skip_to == 10);
  }
}

TEST_CASE("hello resume: since in another epoch is not recovered, start at acked") {
  hello_resume r(since_of("OLD", 5));
  auto plan = r.on_opened("NEW", 10, 6, false);
  CHECK(plan.start == 6);
  CHECK_FALSE(plan.recovered);
  auto w = r.on_first_page(7);
  CHECK_FALSE(w.recovered);  // the plan said so; the page cannot undo it
  CHECK(w.skip_to == 6);
}

TEST_CASE("hello resume: since beyond latest (a failover) rotates: not recovered") {
  SUBCASE("session.lua rotated the epoch: the since epoch is no longer the one in force") {
    hello_resume r(since_of("E", 50));
    auto plan = r.on_opened("E2", 0, 0, true);
    CHECK(r.rotated());
    CHECK(plan.start == 0);
    CHECK_FALSE(plan.recovered);
  }
  SUBCASE("same epoch, since past the counter: start at latest") {
    hello_resume r(since_of("E", 50));
    auto plan = r.on_opened("E", 40, 30, false);
    CHECK_FALSE(r.rotated());
    CHECK(plan.start == 40);
    CHECK_FALSE(plan.recovered);
    CHECK_FALSE(r.on_first_page(std::nullopt).recovered);
  }
}

TEST_CASE("hello resume: since below the trimmed first entry owns up to the gap") {
  hello_resume r(since_of("E", 2));
  CHECK(r.on_opened("E", 20, 2, false).recovered);
  auto w = r.on_first_page(11);  // 3..10 were trimmed away
  CHECK_FALSE(w.recovered);
  CHECK(w.skip_to == 10);
}

TEST_CASE("hello resume: since just below the first entry is recovered") {
  hello_resume r(since_of("E", 10));
  r.on_opened("E", 20, 0, false);
  auto w = r.on_first_page(11);
  CHECK(w.recovered);
  CHECK(w.skip_to == 10);
}

TEST_CASE("hello resume: an empty inbox while latest is beyond start (expired)") {
  hello_resume r(since_of("E", 4));
  r.on_opened("E", 9, 4, false);
  auto w = r.on_first_page(std::nullopt);
  CHECK_FALSE(w.recovered);
  CHECK(w.skip_to == 9);
}

TEST_CASE("hello resume: no since and acked below a trimmed first entry") {
  hello_resume r(std::nullopt);
  CHECK(r.on_opened("E", 30, 5, false).start == 5);
  auto w = r.on_first_page(21);
  CHECK_FALSE(w.recovered);
  CHECK(w.skip_to == 20);
}

}  // namespace test_gateway_hello_resume_unit
