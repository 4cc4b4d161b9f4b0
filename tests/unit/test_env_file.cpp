// core/env_file: the installed environment file as the admin CLI reads it.

#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>

#include "core/env_file.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_env_file_unit {

using namespace pushonce;

namespace {
bool env_file_test_set(const char* name) {
  return std::strcmp(name, "PUSHONCE_REDIS") == 0;
}
bool env_file_test_unset(const char*) {
  return false;
}
}  // namespace

TEST_CASE("env file: systemd's EnvironmentFile lines") {
  auto v = parse_env_file(
      "# comment\n\nPUSHONCE_NAMESPACE=shop\n  PUSHONCE_LOG_LEVEL = info \n; other\n"
      "export PUSHONCE_REDIS=\"redis://10.0.0.3:6379\"\nPUSHONCE_LEADER_ARGS=\nX='a b'\r\n");
  REQUIRE(v.size() == 5);
  CHECK(v[0] == std::pair<std::string, std::string>{"PUSHONCE_NAMESPACE", "shop"});
  CHECK(v[1].second == "info");
  CHECK(v[2] == std::pair<std::string, std::string>{"PUSHONCE_REDIS", "redis://10.0.0.3:6379"});
  CHECK(v[3].second.empty());
  CHECK(v[4].second == "a b");
  CHECK_THROWS_WITH_AS(parse_env_file("A=1\nnot a line\n"), "line 2: expected NAME=VALUE",
                       std::invalid_argument);
  CHECK_THROWS_AS(parse_env_file("1A=1\n"), std::invalid_argument);
}

TEST_CASE("env file: the CLI takes PUSHONCE_* settings the environment does not set") {
  auto parsed = parse_env_file(
      "PUSHONCE_NAMESPACE=shop\nPUSHONCE_REDIS=redis://x:1\nPUSHONCE_LOG_FORMAT=json\n"
      "PUSHONCE_LOG_LEVEL=info\nLD_PRELOAD=/lib/x.so\n");
  auto all = env_file_assignments(parsed, env_file_test_unset);
  REQUIRE(all.size() == 2);
  CHECK(all[0].first == "PUSHONCE_NAMESPACE");
  CHECK(all[1].first == "PUSHONCE_REDIS");
  auto some = env_file_assignments(parsed, env_file_test_set);  // PUSHONCE_REDIS already set
  REQUIRE(some.size() == 1);
  CHECK(some[0].first == "PUSHONCE_NAMESPACE");
}

}  // namespace test_env_file_unit
