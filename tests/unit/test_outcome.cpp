#include "core/outcome.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "core/redis/error.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_outcome_unit {

using namespace pushonce;

TEST_CASE("code_of: every code a program branches on, parsed in one place") {
  CHECK(code_of("fenced") == errc::fenced);
  CHECK(code_of("bad_request") == errc::bad_request);
  CHECK(code_of("usage") == errc::usage);
  CHECK(code_of("already_queued") == errc::already_queued);
  CHECK(code_of("already_assigned") == errc::already_assigned);
  CHECK(code_of("not_queued") == errc::not_queued);
  CHECK(code_of("not_found") == errc::not_found);
  CHECK(code_of("not_assigned") == errc::not_assigned);
  CHECK(code_of("exists") == errc::exists);
  CHECK(code_of("redis_unavailable") == errc::redis_unavailable);
  CHECK(code_of("internal") == errc::internal);
  CHECK(code_of("Fenced") == errc::other);  // codes are exact
  CHECK(code_of("") == errc::other);
  CHECK(code_of("no_secret") == errc::other);
}

TEST_CASE("failure_of: transport errors, script codes, Redis's own errors") {
  redis::result down{redis::make_error_code(redis::error::timeout), {}};
  CHECK(failure_of(down).kind() == errc::redis_unavailable);

  redis::result fenced{{}, redis::reply::make_error("fenced a newer leader acts on this queue")};
  auto f = failure_of(fenced);
  CHECK(f.kind() == errc::fenced);
  CHECK(f.code == "fenced");
  CHECK(f.message == "a newer leader acts on this queue");

  redis::result err{{}, redis::reply::make_error("WRONGTYPE Operation against a key")};
  CHECK(failure_of(err).kind() == errc::internal);
}

}  // namespace test_outcome_unit
