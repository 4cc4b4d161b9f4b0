// --trusted-proxy and X-Forwarded-For (docs/security.md "Behind a proxy").
#include <doctest/doctest.h>

#include <stdexcept>

#include "gateway/limits/client_address.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_client_address_unit {

using namespace pushonce::gateway;
namespace ip = boost::asio::ip;

namespace {
ip::address address_of(const char* s) {
  return ip::make_address(s);
}
}  // namespace

TEST_CASE("client_address: without trusted proxies the peer is the client, whatever the header") {
  trusted_proxies none;
  CHECK(client_address(address_of("10.0.0.5"), "1.2.3.4", none) == "10.0.0.5");
  CHECK(client_address(address_of("::ffff:10.0.0.5"), "", none) == "10.0.0.5");
}

TEST_CASE("client_address: an untrusted peer's X-Forwarded-For is ignored") {
  auto t = trusted_proxies::parse("10.0.0.1");
  CHECK(client_address(address_of("10.0.0.2"), "1.2.3.4", t) == "10.0.0.2");
}

TEST_CASE("client_address: a trusted peer: the rightmost hop that is not a trusted proxy") {
  auto t = trusted_proxies::parse("10.0.0.1, 192.168.0.0/16,::1");
  CHECK(client_address(address_of("10.0.0.1"), "203.0.113.7", t) == "203.0.113.7");
  // A client that sends its own X-Forwarded-For cannot choose its address: the proxy
  // appended the real one on the right.
  CHECK(client_address(address_of("10.0.0.1"), "6.6.6.6, 203.0.113.7", t) == "203.0.113.7");
  // Proxies in a chain are skipped.
  CHECK(client_address(address_of("10.0.0.1"), "6.6.6.6,203.0.113.7, 192.168.4.4", t) ==
        "203.0.113.7");
  CHECK(client_address(address_of("::1"), "2001:db8::9", t) == "2001:db8::9");
  CHECK(client_address(address_of("::ffff:10.0.0.1"), "203.0.113.7", t) == "203.0.113.7");
}

TEST_CASE("client_address: no header, an empty one, garbage, or only proxies") {
  auto t = trusted_proxies::parse("10.0.0.1,10.0.0.2");
  CHECK(client_address(address_of("10.0.0.1"), "", t) == "10.0.0.1");
  CHECK(client_address(address_of("10.0.0.1"), " , ", t) == "10.0.0.1");
  CHECK(client_address(address_of("10.0.0.1"), "not-an-ip", t) == "10.0.0.1");
  CHECK(client_address(address_of("10.0.0.1"), "203.0.113.7, junk, 10.0.0.2", t) == "10.0.0.2");
  CHECK(client_address(address_of("10.0.0.1"), "10.0.0.2", t) == "10.0.0.2");
}

TEST_CASE("trusted_proxies::parse: addresses and CIDR networks; a bad entry is named") {
  auto t = trusted_proxies::parse("127.0.0.1,10.0.0.0/8,fd00::/8");
  CHECK(t.contains(address_of("127.0.0.1")));
  CHECK(t.contains(address_of("10.200.3.4")));
  CHECK(t.contains(address_of("fd12::1")));
  CHECK_FALSE(t.contains(address_of("11.0.0.1")));
  CHECK_FALSE(t.contains(address_of("127.0.0.2")));
  CHECK(trusted_proxies::parse("").empty());
  CHECK_THROWS_WITH_AS(trusted_proxies::parse("10.0.0.1,nope"), doctest::Contains("'nope'"),
                       std::invalid_argument);
  CHECK_THROWS_AS(trusted_proxies::parse("10.0.0.0/33"), std::invalid_argument);
}

TEST_CASE("is_loopback_client: this host's addresses, in every spelling; nothing else") {
  CHECK(is_loopback_client("127.0.0.1"));
  CHECK(is_loopback_client("127.0.0.2"));
  CHECK(is_loopback_client("::1"));
  CHECK(is_loopback_client("::ffff:127.0.0.1"));
  CHECK_FALSE(is_loopback_client("10.0.0.1"));
  CHECK_FALSE(is_loopback_client("::ffff:10.0.0.1"));
  CHECK_FALSE(is_loopback_client("2001:db8::1"));
  CHECK_FALSE(is_loopback_client(""));
  CHECK_FALSE(is_loopback_client("localhost"));
}

}  // namespace test_gateway_client_address_unit
