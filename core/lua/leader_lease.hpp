#pragma once
// The call of lua/leader_lease.lua (KEYS and ARGV order written once, here): the one active
// leader's lease and its fencing token. leader/lease_state.hpp reads the reply
// (lease_reply::from) and decides.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/lua/script_inputs.hpp"

namespace pushonce::lua {

struct leader_lease_input {
  // KEYS
  std::string lease_key;  // NS:leader
  std::string counter;    // NS:leader:fencing
  // ARGV
  std::string mode;  // acquire | renew | release | advance
  std::string id;    // candidate id
  std::string pid;
  std::string host;
  long long lease_ms = 0;
  std::string released;            // channel told when the lease is released
  std::optional<long long> above;  // advance: the fence the new token must be above
};
inline constexpr std::array<std::string_view, 2> leader_lease_key_names{"lease_key", "counter"};
inline constexpr std::array<std::string_view, 7> leader_lease_arg_names{
    "mode", "id", "pid", "host", "lease", "released", "above"};

script_call leader_lease_call(leader_lease_input in);

}  // namespace pushonce::lua
