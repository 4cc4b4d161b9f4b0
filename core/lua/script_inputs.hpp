#pragma once
// The inputs a Lua script names in its opening lines (docs/data-model.md, "Script inputs"):
// every lua/*.lua starts, after its comment, with one line per input, in KEYS/ARGV order,
//   local res_meta = KEYS[1]
//   local id = ARGV[1]
//   local ids = rest(ARGV, 4)      -- ARGV[4..], variadic (last)
// and uses only those names below. Each core/lua module lists the same names (its
// `*_key_names` / `*_arg_names`), in the order its builder fills KEYS and ARGV; the unit test
// test_script_inputs compares both.
//
// The shape every script module in core/lua/ shares. A script's inputs are one struct,
// `<script>_inputs`, with a std::string member per KEYS entry and per ARGV entry, named as the
// script names them in its opening lines (`local waiting = KEYS[1]`...), and two lists of
// (name, member) pairs, `key_fields()` and `arg_fields()`, in KEYS and ARGV order. The call
// is built from those lists only, so the order written there is the order sent, and
// tests/unit/test_lua_inputs.cpp checks it against the script's own opening lines. A
// script that takes a repeated tail (one group per message, per resource...) has
// `more_keys` / `more_args` vectors, sent after the named inputs.

#include <array>
#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/redis/reply.hpp"
#include "core/redis/scripts.hpp"

namespace pushonce::lua {

/// One named input of a script: its name in the script and the member that holds it.
template <class Inputs>
struct script_input {
  std::string_view name;
  std::string Inputs::*member;
};

/// The named keys of a call, in order, without trailing empty ones (an optional key not
/// given: no key name is empty).
template <class Inputs>
std::size_t named_key_count(const Inputs& in) {
  std::size_t n = Inputs::key_fields().size();
  while (n > 0 && (in.*Inputs::key_fields()[n - 1].member).empty()) --n;
  return n;
}

/// KEYS of a call: the named keys (see named_key_count), then `more_keys` when the struct
/// has them.
template <class Inputs>
std::vector<std::string> script_keys(const Inputs& in) {
  std::vector<std::string> out;
  auto n = named_key_count(in);
  for (std::size_t i = 0; i < n; ++i) out.push_back(in.*Inputs::key_fields()[i].member);
  if constexpr (requires { in.more_keys; })
    out.insert(out.end(), in.more_keys.begin(), in.more_keys.end());
  return out;
}

/// The named arguments of a call. A struct whose script takes optional trailing arguments
/// says how many are required (`required_args`); the empty ones after those, at the end,
/// are optional arguments not given and are left out. Without `required_args` all are sent.
template <class Inputs>
std::size_t named_arg_count(const Inputs& in) {
  std::size_t n = Inputs::arg_fields().size();
  if constexpr (requires { Inputs::required_args; })
    while (n > Inputs::required_args && (in.*Inputs::arg_fields()[n - 1].member).empty()) --n;
  return n;
}

/// ARGV of a call: the named arguments (see named_arg_count), then `more_args` when the
/// struct has them.
template <class Inputs>
std::vector<std::string> script_args(const Inputs& in) {
  std::vector<std::string> out;
  auto n = named_arg_count(in);
  for (std::size_t i = 0; i < n; ++i) out.push_back(in.*Inputs::arg_fields()[i].member);
  if constexpr (requires { in.more_args; })
    out.insert(out.end(), in.more_args.begin(), in.more_args.end());
  return out;
}

/// The embedded script the inputs are for.
template <class Inputs>
const redis::script& script_of() {
  return redis::get_script(Inputs::script);
}

/// EVALSHA <sha> <number of keys> KEYS... ARGV... (for eval_all and pipelines), the same
/// order as script_keys and script_args, the strings moved out of `in`.
template <class Inputs>
redis::command script_command(Inputs in) {
  auto n = named_key_count(in);
  std::size_t keys = n;
  if constexpr (requires { in.more_keys; }) keys += in.more_keys.size();
  redis::command cmd;
  cmd.reserve(3 + keys + Inputs::arg_fields().size());
  cmd.emplace_back("EVALSHA");
  cmd.push_back(script_of<Inputs>().sha1);
  cmd.push_back(std::to_string(keys));
  for (std::size_t i = 0; i < n; ++i) cmd.push_back(std::move(in.*Inputs::key_fields()[i].member));
  if constexpr (requires { in.more_keys; })
    for (auto& key : in.more_keys) cmd.push_back(std::move(key));
  auto args = named_arg_count(in);
  for (std::size_t i = 0; i < args; ++i)
    cmd.push_back(std::move(in.*Inputs::arg_fields()[i].member));
  if constexpr (requires { in.more_args; })
    for (auto& arg : in.more_args) cmd.push_back(std::move(arg));
  return cmd;
}

/// Runs one call of a script: EVALSHA, and on NOSCRIPT a SCRIPT LOAD and EVALSHA once more.
template <class Inputs>
boost::asio::awaitable<redis::result> run_script(redis::connection& conn, Inputs in) {
  std::vector<redis::command> one;
  one.push_back(script_command(std::move(in)));
  auto results = co_await redis::eval_all(conn, script_of<Inputs>(), std::move(one));
  co_return std::move(results.front());
}

// ---- reading a script's opening lines (tests/unit/test_script_inputs.cpp) ----

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
