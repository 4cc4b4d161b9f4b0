#pragma once
// The one shape of every script module in core/lua/ (docs/data-model.md, "Script inputs").
// Every lua/*.lua opens, after its comment, with one line per input, in KEYS/ARGV order,
//   local res_meta = KEYS[1]
//   local id = ARGV[1]
//   local ids = rest(ARGV, 4)      -- ARGV[4..], a repeated tail (last)
// and uses only those names below. Its module's inputs are one struct, `<script>_inputs`,
// with a std::string member per KEYS entry and per ARGV entry and two lists of (name,
// member) pairs, `key_fields()` and `arg_fields()`, in KEYS and ARGV order, named as the
// script names them. The call is built from those lists only (script_command), so the
// order written there is the order sent, and tests/unit/test_lua_inputs.cpp checks it
// against the script's own opening lines. A script that takes a repeated tail (one group
// per message, per resource...) has `more_keys` / `more_args` vectors, sent after the named
// inputs; one with optional trailing arguments says how many are required (`required_args`).
// Production code runs a script only through run_script (one call) or run_scripts (a
// pipeline of calls of one script): the struct names the script, so the EVALSHA and the
// SCRIPT LOAD of a NOSCRIPT retry cannot name two different ones.

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

/// The embedded script the inputs are for (looked up once per type: the registry of
/// embedded scripts never changes).
template <class Inputs>
const redis::script& script_of() {
  static const redis::script& s = redis::get_script(Inputs::script);
  return s;
}

/// EVALSHA <sha> <number of keys> KEYS... ARGV... (what run_script and run_scripts send),
/// the same order as script_keys and script_args, the strings moved out of `in`.
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

/// Runs several calls of one script as one pipeline, replies in the calls' order; the calls
/// answered NOSCRIPT are sent again, in order, after one SCRIPT LOAD of that script.
template <class Inputs>
boost::asio::awaitable<std::vector<redis::result>> run_scripts(redis::connection& conn,
                                                               std::vector<Inputs> calls) {
  std::vector<redis::command> cmds;
  cmds.reserve(calls.size());
  for (auto& in : calls) cmds.push_back(script_command(std::move(in)));
  co_return co_await redis::eval_all(conn, script_of<Inputs>(), std::move(cmds));
}

}  // namespace pushonce::lua
