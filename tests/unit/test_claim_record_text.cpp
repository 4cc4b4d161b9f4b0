#include "core/lua/claim_record.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include "tests/support/replies.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_claim_record_text_unit {

using namespace pushonce;
using kind = lua::claim_record::kind;
using pushonce::test::str;

namespace {
lua::claim_record record(kind k, long long offset, long long attempts, long long until_ms = 0,
                         std::string owner = {}, std::string reason = {}) {
  lua::claim_record r;
  r.state = k;
  r.offset = offset;
  r.attempts = attempts;
  r.until_ms = until_ms;
  r.owner = std::move(owner);
  r.reason = std::move(reason);
  return r;
}
}  // namespace

TEST_CASE("claim record text: written as the scripts write it (prelude.lua)") {
  CHECK(lua::claim_record_text(record(kind::delivered, 7, 1)) == "7");
  CHECK(lua::claim_record_text(record(kind::delivered, 7, 3)) == "7:3");
  CHECK(lua::claim_record_text(record(kind::leased, 0, 2, 1700000005000, "w1-7")) ==
        "l:w1-7:1700000005000:2");
  CHECK(lua::claim_record_text(record(kind::released, 0, 0)) == "r:0");
  CHECK(lua::claim_record_text(record(kind::dead, 0, 4, 0, "", "max attempts: too many")) ==
        "x:4:max attempts: too many");
  CHECK(lua::claim_record_text(lua::claim_record{}).empty());
}

TEST_CASE("claim record text: what is written reads back the same") {
  for (const auto& r : {record(kind::delivered, 12, 1), record(kind::delivered, 5, 2),
                        record(kind::leased, 0, 1, 99, "host:42:w"), record(kind::released, 0, 3),
                        record(kind::dead, 0, 2, 0, "", "poison")}) {
    auto text = lua::claim_record_text(r);
    CAPTURE(text);
    auto back = lua::parse_claim_record(str(text));
    REQUIRE(back);
    CHECK(back->state == r.state);
    CHECK(back->offset == r.offset);
    CHECK(back->attempts == r.attempts);
    CHECK(back->until_ms == r.until_ms);
    CHECK(back->owner == r.owner);
    CHECK(back->reason == r.reason);
  }
}

}  // namespace test_claim_record_text_unit
