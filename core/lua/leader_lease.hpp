#pragma once
// The call of lua/leader_lease.lua (KEYS and ARGV order written once, here): the one active
// leader's lease and its fencing token. leader/lease_state.hpp reads the reply
// (lease_reply::from) and decides.

#include <array>
#include <string>
#include <string_view>

#include "core/lua/script_inputs.hpp"

namespace pushonce::lua {

/// lua/leader_lease.lua: its KEYS and ARGV, named and ordered as in the script's opening
/// lines.
struct leader_lease_inputs {
  static constexpr std::string_view script = "leader_lease";
  static constexpr std::size_t required_args = 6;  // above: advance only
  std::string lease_key{};                         // KEYS: NS:leader
  std::string counter{};                           //       NS:leader:fencing
  std::string mode{};                              // ARGV: acquire | renew | release | advance
  std::string id{};                                //       candidate id
  std::string pid{}, host{};
  std::string lease_ms{};  //       the lease's length, ms
  std::string released{};  //       channel told when the lease is released
  std::string above{};     //       advance: the fence the new token must be above ("" otherwise)
  static constexpr auto key_fields() {
    using in = leader_lease_inputs;
    return std::array<script_input<in>, 2>{
        {{"lease_key", &in::lease_key}, {"counter", &in::counter}}};
  }
  static constexpr auto arg_fields() {
    using in = leader_lease_inputs;
    return std::array<script_input<in>, 7>{{{"mode", &in::mode},
                                            {"id", &in::id},
                                            {"pid", &in::pid},
                                            {"host", &in::host},
                                            {"lease", &in::lease_ms},
                                            {"released", &in::released},
                                            {"above", &in::above}}};
  }
};

}  // namespace pushonce::lua
