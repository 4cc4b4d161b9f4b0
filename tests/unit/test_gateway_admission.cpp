// gateway/limits/connection_admission: accept, request and upgrade decisions row by row (no
// sockets).
#include <doctest/doctest.h>

#include "gateway/limits/connection_admission.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_admission_unit {

using namespace pushonce::gateway;
namespace ip = boost::asio::ip;

namespace {

struct fixture {
  std::shared_ptr<slot_counter> connections = slot_counter::create(4, 2);
  std::shared_ptr<slot_counter> forwarded = slot_counter::create(0, 2);
  std::shared_ptr<slot_counter> sessions = slot_counter::create(0, 1);
  connection_admission admit{connections, forwarded, sessions, trusted_proxies::parse("10.0.0.1"),
                             origin_policy{}};
};

ip::address addr(const char* a) {
  return ip::make_address(a);
}

}  // namespace

TEST_CASE("admission: at accept, a peer's connections are capped per address and in total") {
  fixture f;
  connection_info a, b, c;
  CHECK(f.admit.on_accept(addr("192.0.2.1"), a));
  CHECK(a.client == "192.0.2.1");
  CHECK(f.admit.on_accept(addr("192.0.2.1"), b));
  auto v = f.admit.on_accept(addr("192.0.2.1"), c);
  CHECK_FALSE(v);
  CHECK(v.status == 503);
  CHECK(v.reason == "too many connections from this address");
  CHECK(v.log_why == "--max-connections-per-ip");
  CHECK_FALSE(c.connection);
  // loopback and a trusted proxy: the total cap only (4 in all)
  connection_info l1, l2, p1, p2;
  CHECK(f.admit.on_accept(addr("127.0.0.1"), l1));
  CHECK(f.admit.on_accept(addr("10.0.0.1"), p1));
  auto total = f.admit.on_accept(addr("::1"), l2);
  CHECK(total.reason == "too many connections");
  CHECK(total.log_why == "--max-connections");
  a = {};  // a slot given back is free again
  CHECK(f.admit.on_accept(addr("::ffff:10.0.0.1"), p2));
  CHECK(p2.client == "10.0.0.1");
  CHECK(f.connections->total() == 4);
}

TEST_CASE("admission: per request, a trusted proxy's clients are counted as themselves") {
  fixture f;
  connection_info one, two, three;
  for (auto* i : {&one, &two, &three}) REQUIRE(f.admit.on_accept(addr("10.0.0.1"), *i));
  CHECK(f.admit.on_request(addr("10.0.0.1"), "198.51.100.7", one));
  CHECK(one.client == "198.51.100.7");
  CHECK(f.admit.on_request(addr("10.0.0.1"), "198.51.100.7", one));  // the same: kept
  CHECK(f.forwarded->count("198.51.100.7") == 1);
  CHECK(f.admit.on_request(addr("10.0.0.1"), "198.51.100.7", two));
  auto v = f.admit.on_request(addr("10.0.0.1"), "198.51.100.7", three);
  CHECK(v.status == 503);
  CHECK(v.reason == "too many connections from this address");
  // the connection reused for another client moves its slot to it
  CHECK(f.admit.on_request(addr("10.0.0.1"), "203.0.113.5", one));
  CHECK(one.client == "203.0.113.5");
  CHECK(f.forwarded->count("198.51.100.7") == 1);
  CHECK(f.forwarded->count("203.0.113.5") == 1);
  // a request without the header is the proxy itself: no forwarded slot
  CHECK(f.admit.on_request(addr("10.0.0.1"), "", one));
  CHECK(one.client == "10.0.0.1");
  CHECK_FALSE(one.forwarded);
  CHECK(f.forwarded->count("203.0.113.5") == 0);
}

TEST_CASE("admission: X-Forwarded-For from a peer that is not trusted is ignored") {
  fixture f;
  connection_info i;
  REQUIRE(f.admit.on_accept(addr("192.0.2.9"), i));
  CHECK(f.admit.on_request(addr("192.0.2.9"), "198.51.100.7", i));
  CHECK(i.client == "192.0.2.9");
  CHECK_FALSE(i.forwarded);
}

TEST_CASE("admission: an upgrade — shutting down, origin, sessions per address") {
  fixture f;
  connection_info a, b, l1, l2;
  a.client = b.client = "192.0.2.1";
  l1.client = l2.client = "127.0.0.1";
  auto stop = f.admit.on_upgrade("", "h", true, a);
  CHECK(stop.status == 503);
  CHECK(stop.reason == "shutting down");
  CHECK(f.admit.on_upgrade("https://anywhere.example", "h", false, a));  // no policy: any
  CHECK(a.session);
  auto v = f.admit.on_upgrade("", "h", false, b);
  CHECK(v.status == 503);
  CHECK(v.reason == "too many sessions from this address");
  CHECK(f.admit.on_upgrade("", "h", false, l1));  // loopback: not capped per address
  CHECK(f.admit.on_upgrade("", "h", false, l2));
}

TEST_CASE("origin_allowed: the listed origins, or any without a list") {
  origin_policy any;
  CHECK(origin_allowed(any, "https://evil.example", "gw.example"));
  CHECK(origin_allowed(any, "null", "gw.example"));
  origin_policy listed{{"https://app.example"}};
  CHECK(origin_allowed(listed, "https://app.example", "gw.example"));
  CHECK_FALSE(origin_allowed(listed, "https://evil.example", "gw.example"));
  CHECK_FALSE(origin_allowed(listed, "http://gw.example", "gw.example"));
  CHECK(origin_allowed(listed, "", "gw.example"));  // not a browser
}

}  // namespace test_gateway_admission_unit
