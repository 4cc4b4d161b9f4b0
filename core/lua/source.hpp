#pragma once
// The call of lua/source.lua (KEYS and ARGV order written once, here) and its reply: the
// source index of a message source (a queue), allocated once.

#include <array>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

struct source_input {
  // KEYS
  std::string sources;  // NS:sources
  // ARGV
  std::string name;  // "q:<queue>"
};
inline constexpr std::array<std::string_view, 1> source_key_names{"sources"};
inline constexpr std::array<std::string_view, 1> source_arg_names{"name"};
source_input source_for_queue(const keys& k, const std::string& queue);
script_call source_call(source_input in);
/// The index (16..4095).
outcome<long long> source_reply_of(const redis::result& r);

}  // namespace pushonce::lua
