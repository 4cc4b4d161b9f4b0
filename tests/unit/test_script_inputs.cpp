// Every core/lua module names its script's inputs in the order the script's opening lines
// do (local x = KEYS[i] / ARGV[i]), and no script reads KEYS[ / ARGV[ below its opening.

#include <doctest/doctest.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/lua/accept.hpp"
#include "core/lua/join.hpp"
#include "core/lua/leader_lease.hpp"
#include "core/lua/rate_limit.hpp"
#include "core/lua/resource.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/lua/source.hpp"

using namespace pushonce::lua;

namespace {

std::vector<std::string> input_name_list(std::span<const std::string_view> names) {
  return {names.begin(), names.end()};
}

void check_script_inputs(std::string_view script, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args) {
  CAPTURE(script);
  auto text = script_own_text(script);
  REQUIRE_FALSE(text.empty());
  auto opening = read_script_opening(text);
  std::string seen;
  for (const auto& p : opening.problems) seen += p + "; ";
  for (const auto& k : opening.keys) seen += "KEYS " + k + "; ";
  for (const auto& a : opening.args) seen += "ARGV " + a + "; ";
  CAPTURE(seen);
  CHECK(opening.problems == std::vector<std::string>{});
  CHECK(opening.keys == input_name_list(keys));
  CHECK(opening.args == input_name_list(args));
}

}  // namespace

TEST_CASE("script inputs: each module names its script's KEYS and ARGV in order") {
  check_script_inputs("accept", accept_key_names, accept_arg_names);
  check_script_inputs("source", source_key_names, source_arg_names);
  check_script_inputs("join", join_key_names, join_arg_names);
  check_script_inputs("leave", leave_key_names, leave_arg_names);
  check_script_inputs("standing", standing_key_names, standing_arg_names);
  check_script_inputs("leader_lease", leader_lease_key_names, leader_lease_arg_names);
  check_script_inputs("rate_limit", rate_limit_key_names, rate_limit_arg_names);
  check_script_inputs("resource_add", resource_add_key_names, resource_add_arg_names);
  check_script_inputs("resource_release", resource_release_key_names, resource_release_arg_names);
  check_script_inputs("resource_remove", resource_remove_key_names, resource_remove_arg_names);
}

TEST_CASE("script inputs: the opening reader finds swapped lines and inputs used below") {
  auto ok = read_script_opening(
      "-- x.lua: y\nlocal a = KEYS[1]\nlocal b = KEYS[2]  -- note\nlocal c = ARGV[1]\n"
      "local d = rest(ARGV, 2)\nreturn a\n");
  CHECK(ok.problems.empty());
  CHECK(ok.keys == std::vector<std::string>{"a", "b"});
  CHECK(ok.args == std::vector<std::string>{"c", "d..."});
  auto swapped = read_script_opening("local b = KEYS[2]\nlocal a = KEYS[1]\nreturn a\n");
  CHECK(swapped.problems.size() == 2);
  auto below = read_script_opening("local a = KEYS[1]\nreturn redis.call('GET', KEYS[1])\n");
  CHECK(below.problems.size() == 1);
}
