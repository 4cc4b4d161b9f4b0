#pragma once
// The calls of lua/assign.lua (a batch of assignments: first waiting users get the first
// free resources, one outbox entry and one bus message), of lua/assign_plan.lua (what
// assign.lua would do now, read before signing admission tokens) and of lua/expire.lua
// (unaccepted assignments past their deadline go back), and their replies.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/admission_plan.hpp"
#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce {

/// One assignment a script made (or took back): its message id, the user, the resource.
struct assignment {
  std::string id;
  std::string user;
  std::string resource;
};

}  // namespace pushonce

namespace pushonce::lua {

/// lua/assign.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct assign_inputs {
  static constexpr std::string_view script = "assign";
  static constexpr std::size_t required_args = 9;  // no plan: planned_arg, planned_seq left out
  std::string waiting{}, assigned{}, res_meta{}, res_free{}, res_holder{}, seq{}, outbox{}, fence{},
      pending{}, pending_ids{}, events{}, settings{}, rate{}, admissions{}, admissions_t{},
      leases{};  // KEYS
  std::string queue{}, source_arg{}, token_arg{}, timeout_arg{}, retention_arg{}, bus_channel{},
      wake_channel{}, max_arg{}, record_ms_arg{}, planned_arg{}, planned_seq{};  // ARGV
  std::vector<std::string> more_args{};  // per planned assignment: user, resource, token
  static constexpr auto key_fields() {
    using in = assign_inputs;
    return std::array<script_input<in>, 16>{{{"waiting", &in::waiting},
                                             {"assigned", &in::assigned},
                                             {"res_meta", &in::res_meta},
                                             {"res_free", &in::res_free},
                                             {"res_holder", &in::res_holder},
                                             {"seq", &in::seq},
                                             {"outbox", &in::outbox},
                                             {"fence", &in::fence},
                                             {"pending", &in::pending},
                                             {"pending_ids", &in::pending_ids},
                                             {"events", &in::events},
                                             {"settings", &in::settings},
                                             {"rate", &in::rate},
                                             {"admissions", &in::admissions},
                                             {"admissions_t", &in::admissions_t},
                                             {"leases", &in::leases}}};
  }
  static constexpr auto arg_fields() {
    using in = assign_inputs;
    return std::array<script_input<in>, 11>{{{"queue", &in::queue},
                                             {"source_arg", &in::source_arg},
                                             {"token_arg", &in::token_arg},
                                             {"timeout_arg", &in::timeout_arg},
                                             {"retention_arg", &in::retention_arg},
                                             {"bus_channel", &in::bus_channel},
                                             {"wake_channel", &in::wake_channel},
                                             {"max_arg", &in::max_arg},
                                             {"record_ms_arg", &in::record_ms_arg},
                                             {"planned_arg", &in::planned_arg},
                                             {"planned_seq", &in::planned_seq}}};
  }
};

/// What an assign.lua or expire.lua call is for besides its queue.
struct assign_settings {
  long long source = 0;         // the queue's source index (ids' low 12 bits)
  long long fencing_token = 0;  // 0: none
  long long accept_timeout_ms = 0;
  std::chrono::milliseconds outbox_retention{};
  long long max = 1;  // the most assignments (or expiries) in the call
  std::chrono::milliseconds admission_record{};
  bool publish = true;      // false: the script returns the bus message last (bus_message_of)
  long long least_seq = 0;  // the least base of the ids (core/id_floor.hpp; 0: none)
};

/// assign.lua for `queue`, without a plan.
assign_inputs assign_for(const keys& k, const std::string& queue, const assign_settings& s);
/// The same, with a plan read by assign_plan.lua and a token per pair: the script assigns
/// only while the plan holds, else returns {"stale"}.
assign_inputs planned_assign_for(const keys& k, const std::string& queue, const assign_settings& s,
                                 const admission::assign_plan& plan,
                                 const std::vector<std::string>& tokens);

/// Every `width` items of a flat reply (assign.lua: 3, expire.lua: 4) as one assignment.
std::vector<assignment> assignments_of(const redis::reply& r, std::size_t width);
/// assign.lua's reply to a plan that no longer held.
bool assign_was_stale(const redis::reply& r);
/// The bus message a call with `publish` false returned after its `width`-item groups;
/// empty when it made none (nothing assigned or expired).
std::string bus_message_of(const redis::reply& r, std::size_t width);

/// lua/assign_plan.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct assign_plan_inputs {
  static constexpr std::string_view script = "assign_plan";
  static constexpr std::size_t required_args = 1;  // least_arg left out when none
  std::string waiting{}, assigned{}, res_meta{}, res_free{}, res_holder{}, seq{},
      settings{};                      // KEYS
  std::string max_arg{}, least_arg{};  // ARGV
  static constexpr auto key_fields() {
    using in = assign_plan_inputs;
    return std::array<script_input<in>, 7>{{{"waiting", &in::waiting},
                                            {"assigned", &in::assigned},
                                            {"res_meta", &in::res_meta},
                                            {"res_free", &in::res_free},
                                            {"res_holder", &in::res_holder},
                                            {"seq", &in::seq},
                                            {"settings", &in::settings}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<assign_plan_inputs>, 2>{
        {{"max_arg", &assign_plan_inputs::max_arg}, {"least_arg", &assign_plan_inputs::least_arg}}};
  }
};
/// `least_seq`: the least base of the ids (core/id_floor.hpp; 0: none).
assign_plan_inputs assign_plan_for(const keys& k, const std::string& queue, long long max,
                                   long long least_seq = 0);
/// assign_plan.lua's reply {seq, stale, user1, resource1, ...}; std::nullopt when it is not
/// that shape.
std::optional<admission::assign_plan> assign_plan_of(const redis::reply& r);

/// lua/expire.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct expire_inputs {
  static constexpr std::string_view script = "expire";
  static constexpr std::size_t required_args = 7;  // least_arg left out when none
  std::string pending{}, pending_ids{}, assigned{}, res_free{}, res_seq{}, res_holder{}, seq{},
      outbox{}, fence{}, admissions{}, leases{};  // KEYS
  std::string queue{}, source_arg{}, token_arg{}, retention_arg{}, bus_channel{}, wake_channel{},
      max_arg{}, least_arg{};  // ARGV
  static constexpr auto key_fields() {
    using in = expire_inputs;
    return std::array<script_input<in>, 11>{{{"pending", &in::pending},
                                             {"pending_ids", &in::pending_ids},
                                             {"assigned", &in::assigned},
                                             {"res_free", &in::res_free},
                                             {"res_seq", &in::res_seq},
                                             {"res_holder", &in::res_holder},
                                             {"seq", &in::seq},
                                             {"outbox", &in::outbox},
                                             {"fence", &in::fence},
                                             {"admissions", &in::admissions},
                                             {"leases", &in::leases}}};
  }
  static constexpr auto arg_fields() {
    using in = expire_inputs;
    return std::array<script_input<in>, 8>{{{"queue", &in::queue},
                                            {"source_arg", &in::source_arg},
                                            {"token_arg", &in::token_arg},
                                            {"retention_arg", &in::retention_arg},
                                            {"bus_channel", &in::bus_channel},
                                            {"wake_channel", &in::wake_channel},
                                            {"max_arg", &in::max_arg},
                                            {"least_arg", &in::least_arg}}};
  }
};
/// expire.lua for `queue` (accept_timeout_ms and admission_record of `s` unused).
expire_inputs expire_for(const keys& k, const std::string& queue, const assign_settings& s);

}  // namespace pushonce::lua
