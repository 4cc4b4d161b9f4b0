#pragma once
// The inputs a Lua script names in its opening lines (docs/data-model.md, "Script inputs"):
// every lua/*.lua starts, after its comment, with one line per input, in KEYS/ARGV order,
//   local res_meta = KEYS[1]
//   local id = ARGV[1]
//   local ids = rest(ARGV, 4)      -- ARGV[4..], variadic (last)
// and uses only those names below. Each core/lua module lists the same names (its
// `*_key_names` / `*_arg_names`), in the order its builder fills KEYS and ARGV; the unit test
// test_script_inputs compares both.

#include <string>
#include <string_view>
#include <vector>

namespace pushonce::lua {

/// A script call as a module builds it: its KEYS and ARGV, in order.
struct script_call {
  std::vector<std::string> keys;
  std::vector<std::string> args;
};

struct script_opening {
  std::vector<std::string> keys;  // names of KEYS[1..n], in order
  std::vector<std::string> args;  // names of ARGV[1..n]; a variadic tail as "<name>..."
  /// What is wrong with the opening: an input named out of order, or a KEYS[ / ARGV[ below
  /// it (the line, trimmed). Empty: the script follows the convention.
  std::vector<std::string> problems;
};

/// Reads the opening lines of a script's own text (without lua/lib/prelude.lua).
script_opening read_script_opening(std::string_view text);

/// The embedded text of lua/<name>.lua without the prelude every script is preceded by;
/// empty if there is no such script.
std::string_view script_own_text(std::string_view name);

}  // namespace pushonce::lua
