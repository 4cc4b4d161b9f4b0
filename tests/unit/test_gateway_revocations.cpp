// gateway/auth/revocations: expiry, iat comparisons, snapshot and broadcast in any order.
#include <doctest/doctest.h>

#include <string>

#include "gateway/auth/revocations.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_revocations_unit {

using namespace pushonce::gateway;

namespace {
identity token_of(std::string user, std::optional<long long> iat) {
  return identity{std::move(user), std::nullopt, iat};
}
}  // namespace

TEST_CASE("revocations: a token issued in the revocation's second or before is refused") {
  revocation r{100'300, 200'000};  // at 100.3 s, until 200 s
  CHECK(refused_by(r, token_of("ada", 99), 150'000));
  CHECK(refused_by(r, token_of("ada", 100), 150'000));  // same second: may be older
  CHECK_FALSE(refused_by(r, token_of("ada", 101), 150'000));
  CHECK(refused_by(r, token_of("ada", std::nullopt), 150'000));  // no iat, --dev-auth
  // Expired: nothing is refused any more.
  CHECK_FALSE(refused_by(r, token_of("ada", 99), 200'000));
  CHECK_FALSE(refused_by(r, token_of("ada", std::nullopt), 250'000));
}

TEST_CASE("revocations: the set answers per user and forgets expired entries") {
  revocations set;
  CHECK_FALSE(set.revoked(token_of("ada", 1), 0));
  set.apply("ada", {10'000, 20'000});
  CHECK(set.revoked(token_of("ada", 9), 15'000));
  CHECK_FALSE(set.revoked(token_of("bob", 9), 15'000));
  CHECK_FALSE(set.revoked(token_of("ada", 11), 15'000));
  CHECK_FALSE(set.revoked(token_of("ada", 9), 20'000));
  CHECK(set.size() == 1);
  CHECK(set.prune(20'000) == 0);
  CHECK(set.size() == 0);
}

TEST_CASE("revocations: a snapshot and a broadcast merge in either order, the later wins") {
  SUBCASE("broadcast, then an older snapshot: the broadcast survives") {
    revocations set;
    set.apply("ada", {50'000, 90'000});
    set.load({{"ada", {10'000, 60'000}}, {"bob", {10'000, 60'000}}}, 20'000);
    CHECK(set.revoked(token_of("ada", 49), 70'000));  // kept the later at and until
    CHECK_FALSE(set.revoked(token_of("ada", 51), 70'000));
    CHECK(set.revoked(token_of("bob", 9), 30'000));
  }
  SUBCASE("snapshot, then a later broadcast") {
    revocations set;
    set.load({{"ada", {10'000, 60'000}}}, 20'000);
    set.apply("ada", {50'000, 90'000});
    CHECK(set.revoked(token_of("ada", 49), 70'000));
  }
  SUBCASE("expired snapshot entries are not loaded") {
    revocations set;
    set.load({{"ada", {10'000, 15'000}}}, 20'000);
    CHECK(set.size() == 0);
  }
}

TEST_CASE("revocations: a snapshot names the users it taught (their broadcast was missed)") {
  revocations set;
  CHECK_FALSE(set.loaded());
  set.apply("ada", {50'000, 90'000});  // heard by broadcast
  auto taught = set.load(
      {{"ada", {50'000, 90'000}}, {"bob", {10'000, 60'000}}, {"cy", {10'000, 15'000}}}, 20'000);
  CHECK(set.loaded());
  // ada's is known already; cy's has expired; bob's was missed.
  CHECK(taught == std::vector<std::string>{"bob"});
  // A later revocation of a held user is news; the same one again is not.
  CHECK(set.load({{"bob", {30'000, 60'000}}, {"ada", {50'000, 90'000}}}, 20'000) ==
        std::vector<std::string>{"bob"});
  CHECK(set.load({{"bob", {30'000, 60'000}}}, 20'000).empty());
}

TEST_CASE("revocations: control messages round-trip; malformed ones are refused") {
  control_message d{"ada", std::nullopt};
  control_message r{"bob", revocation{1'700'000'000'123, 1'700'086'400'123}};
  CHECK(format_control_message(d) == "d ada");
  CHECK(parse_control_message(format_control_message(d)) == d);
  CHECK(parse_control_message(format_control_message(r)) == r);
  CHECK_FALSE(parse_control_message(""));
  CHECK_FALSE(parse_control_message("d "));
  CHECK_FALSE(parse_control_message("x ada"));
  CHECK_FALSE(parse_control_message("r 1 2"));
  CHECK_FALSE(parse_control_message("r a 2 ada"));
  CHECK_FALSE(parse_control_message("r 1 -2 ada"));
}

TEST_CASE("revocations: the fields of NS:{revoked} parse; bad ones are skipped") {
  auto s = parse_revocation_fields({{"ada", "100:200"}, {"bob", "x:1"}, {"cy", "5"}, {"", "1:2"}});
  REQUIRE(s.size() == 1);
  CHECK(s[0].first == "ada");
  CHECK(s[0].second == revocation{100, 200});
}

}  // namespace test_gateway_revocations_unit
