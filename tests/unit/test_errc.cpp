#include "core/errc.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_errc_unit {

using namespace pushonce;

namespace {
std::vector<errc> every_errc() {
  std::vector<errc> out;
  for (int i = 1; i <= static_cast<int>(errc::internal); ++i) out.push_back(static_cast<errc>(i));
  return out;
}
}  // namespace

TEST_CASE("errc: a boost::system error category") {
  boost::system::error_code ec = errc::fenced;  // is_error_code_enum
  CHECK(ec.category() == errc_category());
  CHECK(std::string(ec.category().name()) == "pushonce");
  CHECK(ec == make_error_code(errc::fenced));
  CHECK(ec != make_error_code(errc::internal));
  CHECK(ec.message() == "a newer leader has acted on the queue");
  CHECK(make_error_code(errc::redis_unavailable).message() ==
        "Redis did not answer or refuses work");
  CHECK(errc_category().message(0) == "unknown pushonce error");
  CHECK(errc_category().message(999) == "unknown pushonce error");
  for (auto e : every_errc()) {
    CAPTURE(static_cast<int>(e));
    auto m = make_error_code(e).message();
    CHECK(!m.empty());
    CHECK(m != "unknown pushonce error");
    CHECK(make_error_code(e));  // every errc is an error, none is 0
  }
}

TEST_CASE("errc: the contract's words, one per code, read back exactly") {
  std::set<std::string_view> words;
  for (auto e : every_errc()) {
    auto w = code_text(e);
    CAPTURE(w);
    CHECK(words.insert(w).second);
    CHECK(errc_of_code(w) == e);
  }
  CHECK(code_text(errc::bad_request) == "bad_request");
  CHECK(code_text(errc::usage) == "usage");
  CHECK(code_text(errc::too_large) == "too_large");
  CHECK(code_text(errc::rate_limited) == "rate_limited");
  CHECK(code_text(errc::already_queued) == "already_queued");
  CHECK(code_text(errc::already_assigned) == "already_assigned");
  CHECK(code_text(errc::not_queued) == "not_queued");
  CHECK(code_text(errc::not_found) == "not_found");
  CHECK(code_text(errc::not_assigned) == "not_assigned");
  CHECK(code_text(errc::not_dead) == "not_dead");
  CHECK(code_text(errc::exists) == "exists");
  CHECK(code_text(errc::no_secret) == "no_secret");
  CHECK(code_text(errc::redis_unavailable) == "redis_unavailable");
  CHECK(code_text(errc::internal) == "internal");
  CHECK(code_text(static_cast<errc>(0)) == "internal");
  // Codes are exact words.
  CHECK_FALSE(errc_of_code("Fenced"));
  CHECK_FALSE(errc_of_code(""));
  CHECK_FALSE(errc_of_code("ERR"));
  CHECK_FALSE(errc_of_code("bad_request "));
}

}  // namespace test_errc_unit
