#include "core/redis/sentinel_choice.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <string>
#include <vector>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_sentinel_choice_unit {

using pushonce::redis::reply;
using pushonce::redis::sentinel_choice;
using pushonce::redis::sentinel_config;

namespace {

reply text(std::string s) {
  reply r;
  r.kind = reply::type::string;
  r.str = std::move(s);
  return r;
}

reply array(std::vector<reply> items) {
  reply r;
  r.kind = reply::type::array;
  r.elements = std::move(items);
  return r;
}

sentinel_choice three(const char* url = "redis+sentinel://u:pw@s1:1,s2:2,s3:3/main") {
  return sentinel_choice(sentinel_config::parse(url));
}

}  // namespace

TEST_CASE("sentinel_choice: asks in URL order, then the one that answered last first") {
  auto c = three();
  CHECK(c.order() == std::vector<std::size_t>{0, 1, 2});
  CHECK(c.query() == pushonce::redis::command{"SENTINEL", "get-master-addr-by-name", "main"});
  std::string why;
  REQUIRE(c.on_answer(2, array({text("10.0.0.9"), text("6380")}), why));
  CHECK(c.order() == std::vector<std::size_t>{2, 0, 1});
  // A failed answer does not change the order.
  CHECK_FALSE(c.on_answer(0, reply{}, why));
  CHECK(c.order() == std::vector<std::size_t>{2, 0, 1});
  REQUIRE(c.on_answer(1, array({text("h"), text("1")}), why));
  CHECK(c.order() == std::vector<std::size_t>{1, 0, 2});
}

TEST_CASE("sentinel_choice: the master carries the URL's credentials and TLS") {
  auto c = three("rediss+sentinel://u:pw@s1:1,s2:2");
  std::string why;
  auto m = c.on_answer(1, array({text("10.0.0.9"), text("6380")}), why);
  REQUIRE(m);
  CHECK(m->host == "10.0.0.9");
  CHECK(m->port == 6380);
  CHECK(m->user == "u");
  CHECK(m->password == "pw");
  CHECK(m->tls);
  CHECK(m->db == 0);
}

TEST_CASE("sentinel_choice: unknown names, errors and malformed answers name no master") {
  auto c = three();
  std::string why;
  CHECK_FALSE(c.on_answer(0, reply{}, why));  // nil: the name is not monitored
  CHECK(why.find("main") != std::string::npos);
  CHECK_FALSE(c.on_answer(0, reply::make_error("NOAUTH Authentication required."), why));
  CHECK(why.find("NOAUTH") != std::string::npos);
  CHECK_FALSE(c.on_answer(0, text("127.0.0.1"), why));
  CHECK_FALSE(c.on_answer(0, array({text("127.0.0.1")}), why));
  CHECK_FALSE(c.on_answer(0, array({text(""), text("6379")}), why));
  CHECK_FALSE(c.on_answer(0, array({text("h"), text("port")}), why));
  CHECK_FALSE(c.on_answer(0, array({text("h"), text("0")}), why));
  CHECK_FALSE(c.on_answer(0, array({text("h"), text("65536")}), why));
  CHECK_FALSE(c.on_answer(7, array({text("h"), text("1")}), why));  // no such sentinel
  CHECK(c.order() == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("sentinel_choice: ROLE says master, or not") {
  reply num;
  num.kind = reply::type::integer;
  num.integer = 100;
  CHECK(sentinel_choice::is_master(array({text("master"), num, array({})})));
  CHECK_FALSE(sentinel_choice::is_master(
      array({text("slave"), text("127.0.0.1"), num, text("connected"), num})));
  CHECK_FALSE(sentinel_choice::is_master(array({text("sentinel"), array({text("mymaster")})})));
  CHECK_FALSE(sentinel_choice::is_master(array({})));
  CHECK_FALSE(sentinel_choice::is_master(reply::make_error("ERR unknown command")));
  CHECK_FALSE(sentinel_choice::is_master(text("master")));
}

}  // namespace test_sentinel_choice_unit
