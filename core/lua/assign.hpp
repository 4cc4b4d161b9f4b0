#pragma once
// The calls of lua/assign.lua and lua/assign_plan.lua (KEYS and ARGV order written once,
// here) and their replies: a batch of assignments, and the read-only plan of one that the
// leader signs admission tokens for first (core/admission_plan.hpp).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/admission_plan.hpp"
#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/assign.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct assign_inputs {
  static constexpr std::string_view script = "assign";
  static constexpr std::size_t required_args = 9;  // without a plan: no planned_arg, planned_seq
  std::string waiting{}, assigned{}, res_meta{}, res_free{}, res_holder{}, seq{}, outbox{}, fence{},
      pending{}, pending_ids{}, events{}, settings{}, rate{}, admissions{}, admissions_t{};  // KEYS
  std::string queue{}, source_arg{}, token_arg{}, timeout_arg{}, retention_arg{}, bus_channel{},
      wake_channel{}, max_arg{}, record_ms_arg{}, planned_arg{}, planned_seq{};  // ARGV
  std::vector<std::string> more_args{};  // per planned assignment: user, resource, token
  static constexpr auto key_fields() {
    return std::array<script_input<assign_inputs>, 15>{
        {{"waiting", &assign_inputs::waiting},
         {"assigned", &assign_inputs::assigned},
         {"res_meta", &assign_inputs::res_meta},
         {"res_free", &assign_inputs::res_free},
         {"res_holder", &assign_inputs::res_holder},
         {"seq", &assign_inputs::seq},
         {"outbox", &assign_inputs::outbox},
         {"fence", &assign_inputs::fence},
         {"pending", &assign_inputs::pending},
         {"pending_ids", &assign_inputs::pending_ids},
         {"events", &assign_inputs::events},
         {"settings", &assign_inputs::settings},
         {"rate", &assign_inputs::rate},
         {"admissions", &assign_inputs::admissions},
         {"admissions_t", &assign_inputs::admissions_t}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<assign_inputs>, 11>{
        {{"queue", &assign_inputs::queue},
         {"source_arg", &assign_inputs::source_arg},
         {"token_arg", &assign_inputs::token_arg},
         {"timeout_arg", &assign_inputs::timeout_arg},
         {"retention_arg", &assign_inputs::retention_arg},
         {"bus_channel", &assign_inputs::bus_channel},
         {"wake_channel", &assign_inputs::wake_channel},
         {"max_arg", &assign_inputs::max_arg},
         {"record_ms_arg", &assign_inputs::record_ms_arg},
         {"planned_arg", &assign_inputs::planned_arg},
         {"planned_seq", &assign_inputs::planned_seq}}};
  }
};

/// lua/assign_plan.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct assign_plan_inputs {
  static constexpr std::string_view script = "assign_plan";
  std::string waiting{}, assigned{}, res_meta{}, res_free{}, res_holder{}, seq{},
      settings{};         // KEYS
  std::string max_arg{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<assign_plan_inputs>, 7>{
        {{"waiting", &assign_plan_inputs::waiting},
         {"assigned", &assign_plan_inputs::assigned},
         {"res_meta", &assign_plan_inputs::res_meta},
         {"res_free", &assign_plan_inputs::res_free},
         {"res_holder", &assign_plan_inputs::res_holder},
         {"seq", &assign_plan_inputs::seq},
         {"settings", &assign_plan_inputs::settings}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<assign_plan_inputs>, 1>{
        {{"max_arg", &assign_plan_inputs::max_arg}}};
  }
};

/// What an assign.lua call is asked to do (besides the queue it runs on).
struct assign_settings {
  long long source = 0;             // the leader's source index (0..4095)
  long long fencing_token = 0;      // 0: none
  long long accept_timeout_ms = 0;  // 0: none (the queue's accept_timeout_s replaces it)
  std::chrono::milliseconds outbox_retention{0};
  long long max = 1;                              // the most assignments to make (1..1000)
  std::chrono::milliseconds admission_record{0};  // how long a record is kept
};

/// assign.lua on `queue`, without a plan.
assign_inputs assign_for(const keys& k, const std::string& queue, const assign_settings& s);
/// The same call with a plan (assign_plan.lua's reply) and its signed tokens, one per pair:
/// the script assigns exactly those pairs, or nothing when the plan no longer holds.
assign_inputs assign_for(const keys& k, const std::string& queue, const assign_settings& s,
                         const admission::assign_plan& plan,
                         const std::vector<std::string>& tokens);
/// assign_plan.lua on `queue`: the next `max` assignments, read only.
assign_plan_inputs assign_plan_for(const keys& k, const std::string& queue, long long max);

struct assignment {
  std::string id;
  std::string user;
  std::string resource;
};

/// Every `width` items of a flat script reply as one assignment (id, user, resource first):
/// assign.lua's reply (width 3) and expire.lua's (width 4, the expired message id first).
std::vector<assignment> assignments_of_reply(const redis::reply& r, std::size_t width);
/// assign.lua's {"stale"}: the plan it was given no longer holds, nothing was assigned.
bool assign_reply_stale(const redis::reply& r);
/// assign_plan.lua's reply {seq, stale, user1, resource1, ...}; std::nullopt when it is not
/// its shape.
std::optional<admission::assign_plan> parse_assign_plan_reply(const redis::reply& r);

}  // namespace pushonce::lua
