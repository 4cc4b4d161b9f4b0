#pragma once
// The calls of lua/admission.lua (an admission's state and lease; its renewal) and
// lua/next_due.lua (when the queue's rate next allows an assignment), and their replies
// (docs/capacity.md).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

/// lua/admission.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct admission_inputs {
  static constexpr std::string_view script = "admission";
  std::string admissions{}, assigned{}, pending_ids{}, leases{}, settings{},
      admissions_t{};                  // KEYS
  std::string id{}, what{}, at_arg{};  // ARGV
  static constexpr auto key_fields() {
    using in = admission_inputs;
    return std::array<script_input<in>, 6>{{{"admissions", &in::admissions},
                                            {"assigned", &in::assigned},
                                            {"pending_ids", &in::pending_ids},
                                            {"leases", &in::leases},
                                            {"settings", &in::settings},
                                            {"admissions_t", &in::admissions_t}}};
  }
  static constexpr auto arg_fields() {
    using in = admission_inputs;
    return std::array<script_input<in>, 3>{
        {{"id", &in::id}, {"what", &in::what}, {"at_arg", &in::at_arg}}};
  }
};
/// get (renew false) or renew `id` of `queue`; `at_ms`: the time of the check that renews
/// (std::nullopt: now).
admission_inputs admission_for(const keys& k, const std::string& queue, std::string id, bool renew,
                               std::optional<long long> at_ms = std::nullopt);

/// An admission's record and lease: state (assigned, accepted, expired, released), user,
/// resource, and the lease's end (ms) while it is live and has one.
struct admission_reply {
  std::string state, user, resource;
  std::optional<long long> expires_at;
};
/// std::nullopt-free: a failure for an error reply (not_found, expired, released).
outcome<admission_reply> admission_reply_of(const redis::result& r);

/// lua/next_due.lua: its KEYS, named and ordered as in the script's opening lines.
struct next_due_inputs {
  static constexpr std::string_view script = "next_due";
  std::string settings{}, waiting{}, assigned{};  // KEYS
  static constexpr auto key_fields() {
    using in = next_due_inputs;
    return std::array<script_input<in>, 3>{
        {{"settings", &in::settings}, {"waiting", &in::waiting}, {"assigned", &in::assigned}}};
  }
  static constexpr auto arg_fields() { return std::array<script_input<next_due_inputs>, 0>{}; }
};
next_due_inputs next_due_for(const keys& k, const std::string& queue);

/// lua/admissions_list.lua: its KEYS and ARGV, named and ordered as in the script's opening
/// lines.
struct admissions_list_inputs {
  static constexpr std::string_view script = "admissions_list";
  std::string assigned{}, pending_ids{}, pending{}, leases{};  // KEYS
  std::string only{};                                          // ARGV
  static constexpr auto key_fields() {
    using in = admissions_list_inputs;
    return std::array<script_input<in>, 4>{{{"assigned", &in::assigned},
                                            {"pending_ids", &in::pending_ids},
                                            {"pending", &in::pending},
                                            {"leases", &in::leases}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<admissions_list_inputs>, 1>{
        {{"only", &admissions_list_inputs::only}}};
  }
};
admissions_list_inputs admissions_list_for(const keys& k, const std::string& queue,
                                           std::string user);
/// One live admission of admissions_list.lua's reply.
struct live_admission {
  std::string id, user, resource, state;
  std::optional<long long> expires_at, accept_by;
};
std::vector<live_admission> admissions_list_of(const redis::reply& r);

}  // namespace pushonce::lua
