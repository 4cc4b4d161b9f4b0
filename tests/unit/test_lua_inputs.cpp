// Every script module's inputs struct against its script: the `local x = KEYS[i]` /
// `local x = ARGV[i]` lines a script opens with name its inputs in the order and number of
// the struct's key_fields() and arg_fields(), and nothing below them reads KEYS[n] or
// ARGV[n] by number (a repeated tail, ARGV[i] with a computed index, is the struct's
// more_keys / more_args). The text checked is the embedded one, the text Redis runs.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/lua/accept.hpp"
#include "core/lua/assign.hpp"
#include "core/lua/capacity.hpp"
#include "core/lua/claim.hpp"
#include "core/lua/dead_letter_add.hpp"
#include "core/lua/join.hpp"
#include "core/lua/leader_lease.hpp"
#include "core/lua/opening.hpp"
#include "core/lua/positions.hpp"
#include "core/lua/presence.hpp"
#include "core/lua/publish.hpp"
#include "core/lua/rate_limit.hpp"
#include "core/lua/replay.hpp"
#include "core/lua/resource.hpp"
#include "core/lua/revoke.hpp"
#include "core/lua/session.hpp"
#include "core/lua/settings.hpp"
#include "core/lua/source.hpp"
#include "core/redis/script_sources.hpp"

namespace {

using namespace pushonce;

struct opening_lines {
  std::vector<std::string> keys;
  std::vector<std::string> args;
  std::vector<std::string> problems;  // out-of-order lines, numbered reads below
};

/// The script's opening lines (the first run of `local x = KEYS[i]` / `ARGV[i]` lines; the
/// prelude before them has none) and what is wrong with them or below them.
opening_lines read_opening_lines(std::string_view text) {
  static const std::regex input_line(R"(^local (\w+) = (KEYS|ARGV)\[(\d+)\]\s*(--.*)?$)");
  static const std::regex numbered_read(R"((KEYS|ARGV)\[\d+\])");
  opening_lines out;
  bool started = false, ended = false;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string line(text.substr(pos, nl - pos));
    pos = nl + 1;
    std::smatch m;
    if (!ended && std::regex_match(line, m, input_line)) {
      started = true;
      auto& list = m[2] == "KEYS" ? out.keys : out.args;
      if (m[2] == "KEYS" && !out.args.empty()) out.problems.push_back("KEYS after ARGV: " + line);
      if (std::stoul(m[3]) != list.size() + 1) out.problems.push_back("out of order: " + line);
      list.push_back(m[1]);
      continue;
    }
    if (started) ended = true;
    if (ended && line.rfind("--", 0) != 0 && std::regex_search(line, numbered_read))
      out.problems.push_back("reads an input by number below the opening lines: " + line);
  }
  return out;
}

std::string_view embedded_text(std::string_view name) {
  for (const auto& s : redis::embedded_scripts())
    if (s.name == name) return s.text;
  return {};
}

template <class List>
std::vector<std::string> field_names(const List& fields) {
  std::vector<std::string> out;
  for (const auto& f : fields) out.emplace_back(f.name);
  return out;
}

template <class Inputs>
void check_inputs_match_script() {
  CAPTURE(Inputs::script);
  auto text = embedded_text(Inputs::script);
  REQUIRE_FALSE(text.empty());
  auto lines = read_opening_lines(text);
  CHECK(lines.problems == std::vector<std::string>{});
  CHECK(lines.keys == field_names(Inputs::key_fields()));
  CHECK(lines.args == field_names(Inputs::arg_fields()));
}

template <class... Inputs>
std::set<std::string_view> check_all(std::tuple<Inputs...>*) {
  (check_inputs_match_script<Inputs>(), ...);
  return {Inputs::script...};
}

using all_inputs =
    std::tuple<lua::claim_inputs, lua::claim_batch_inputs, lua::published_inputs,
               lua::release_inputs, lua::dead_letter_inputs, lua::opening_draw_inputs,
               lua::opening_move_inputs, lua::presence_open_inputs, lua::presence_close_inputs,
               lua::presence_joined_inputs, lua::presence_fold_inputs, lua::presence_reclaim_inputs,
               lua::presence_drop_inputs, lua::abandon_inputs, lua::publish_inputs,
               lua::rate_limit_inputs, lua::replay_inputs, lua::session_inputs, lua::ack_inputs,
               lua::settings_inputs, lua::assign_inputs, lua::assign_plan_inputs,
               lua::expire_inputs, lua::positions_inputs, lua::dead_letter_add_inputs,
               lua::revoke_inputs, lua::accept_inputs, lua::source_inputs, lua::join_inputs,
               lua::leave_inputs, lua::standing_inputs, lua::leader_lease_inputs,
               lua::resource_add_inputs, lua::resource_release_inputs, lua::resource_remove_inputs,
               lua::admission_inputs, lua::next_due_inputs, lua::admissions_list_inputs>;

}  // namespace

TEST_CASE("lua inputs: every module's struct names its script's inputs in the script's order") {
  auto covered = check_all(static_cast<all_inputs*>(nullptr));
  CHECK(covered.size() == std::tuple_size_v<all_inputs>);
  // Every script has its module, and opens by naming its inputs.
  for (const auto& s : redis::embedded_scripts()) {
    CAPTURE(s.name);
    CHECK(covered.count(s.name) == 1);
    auto lines = read_opening_lines(s.text);
    CHECK(lines.problems == std::vector<std::string>{});
    CHECK(lines.keys.size() + lines.args.size() > 0);
  }
}

TEST_CASE("lua inputs: the opening-line reader finds a swapped pair and a numbered read") {
  auto swapped = read_opening_lines(
      "-- x.lua\nlocal a = KEYS[2]\nlocal b = KEYS[1]\nlocal c = ARGV[1]\nreturn c\n");
  CHECK(swapped.problems.size() == 2);
  auto numbered = read_opening_lines("local a = KEYS[1]\nreturn redis.call('GET', KEYS[1])\n");
  CHECK(numbered.keys == std::vector<std::string>{"a"});
  CHECK(numbered.problems.size() == 1);
  auto tail = read_opening_lines("local a = ARGV[1]\nfor i = 2, #ARGV do a = a .. ARGV[i] end\n");
  CHECK(tail.problems.empty());
  auto rest_tail = read_opening_lines(
      "-- x.lua: y\nlocal a = KEYS[1]\nlocal b = KEYS[2]  -- note\nlocal c = ARGV[1]\n"
      "local d = rest(ARGV, 2)\nreturn a\n");
  CHECK(rest_tail.problems.empty());
  CHECK(rest_tail.keys == std::vector<std::string>{"a", "b"});
  CHECK(rest_tail.args == std::vector<std::string>{"c"});
}
