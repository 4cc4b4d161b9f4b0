#include <doctest/doctest.h>

#include "core/redis/reply.hpp"
#include "gateway/state/inbox.hpp"
#include "tests/support/replies.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_inbox_unit {

using namespace pushonce;
using namespace pushonce::gateway;

using pushonce::test::integer;
using pushonce::test::str;
using arr_fn = redis::reply (*)(std::vector<redis::reply>);
constexpr arr_fn arr = pushonce::test::array;

TEST_CASE("inbox: parse_page reads <offset>-0 ids and field f, skips the malformed") {
  auto page = inbox::parse_page(arr({
      arr({str("5-0"), arr({str("f"), str("five")})}),
      arr({str("x-0"), arr({str("f"), str("bad id")})}),
      arr({str("6-0"), arr({str("g"), str("no f"), str("f"), str("six")})}),
      arr({str("7-0")}),
      arr({str("8-0"), arr({str("g"), str("no f at all")})}),
  }));
  REQUIRE(page);
  REQUIRE(page->size() == 2);
  CHECK(page->at(0).offset == 5);
  CHECK(page->at(0).frame == "five");
  CHECK(page->at(1).offset == 6);
  CHECK(page->at(1).frame == "six");
  CHECK_FALSE(inbox::parse_page(str("oops")));
  CHECK(inbox::parse_page(arr({}))->empty());
}

TEST_CASE("inbox: parse_position reads session.lua's {epoch, offset, acked}") {
  auto p = inbox::parse_position(arr({str("ep"), integer(12), integer(9)}));
  REQUIRE(p);
  CHECK(p->epoch == "ep");
  CHECK(p->latest == 12);
  CHECK(p->acked == 9);
  CHECK_FALSE(p->rotated);
  p = inbox::parse_position(arr({str("ep2"), integer(12), integer(9), integer(1)}));
  REQUIRE(p);
  CHECK(p->rotated);  // the epoch was replaced (the client's offset went back)
  CHECK_FALSE(inbox::parse_position(arr({str("ep"), integer(1)})));
  CHECK_FALSE(inbox::parse_position(str("ep")));
}

}  // namespace test_gateway_inbox_unit
