#pragma once
// The calls of lua/resource_add.lua, lua/resource_release.lua and lua/resource_remove.lua
// (KEYS and ARGV order written once, here) and their replies: a queue's resource pool.
// resource_release and resource_remove share their first seven keys, in the same order.

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

// --- resource_add.lua: add free resources, all or nothing ---
/// lua/resource_add.lua: its KEYS and ARGV, named and ordered as in the script's opening
/// lines; the ids are the rest of ARGV.
struct resource_add_inputs {
  static constexpr std::string_view script = "resource_add";
  std::string res_meta{}, res_free{}, res_seq{};  // KEYS
  std::string wake_channel{}, queue{}, meta{};    // ARGV (meta: JSON, validated, or "")
  std::vector<std::string> more_args{};           // ARGV after the named ones: the ids
  static constexpr auto key_fields() {
    using in = resource_add_inputs;
    return std::array<script_input<in>, 3>{
        {{"res_meta", &in::res_meta}, {"res_free", &in::res_free}, {"res_seq", &in::res_seq}}};
  }
  static constexpr auto arg_fields() {
    using in = resource_add_inputs;
    return std::array<script_input<in>, 3>{
        {{"wake_channel", &in::wake_channel}, {"queue", &in::queue}, {"meta", &in::meta}}};
  }
};
resource_add_inputs resource_add_for(const keys& k, const std::string& queue,
                                     std::vector<std::string> ids, std::string meta_json);
/// The number of resources added (a failure as the script returned it: `exists <id>`).
outcome<long long> resource_add_reply(const redis::result& r);

// --- resource_release.lua: the holder is done, the resource is free again ---
/// lua/resource_release.lua: its KEYS and ARGV, named and ordered as in the script's
/// opening lines (its first seven keys are resource_remove.lua's, in the same order).
struct resource_release_inputs {
  static constexpr std::string_view script = "resource_release";
  std::string res_meta{}, res_free{}, res_holder{}, assigned{}, pending{}, pending_ids{},
      admissions{}, res_seq{}, leases{}, seq{}, outbox{};  // KEYS
  std::string id{}, wake_channel{}, queue{}, source_arg{}, retention_arg{}, bus_channel{},
      admission_arg{}, reason{};  // ARGV
  static constexpr auto key_fields() {
    using in = resource_release_inputs;
    return std::array<script_input<in>, 11>{{{"res_meta", &in::res_meta},
                                             {"res_free", &in::res_free},
                                             {"res_holder", &in::res_holder},
                                             {"assigned", &in::assigned},
                                             {"pending", &in::pending},
                                             {"pending_ids", &in::pending_ids},
                                             {"admissions", &in::admissions},
                                             {"res_seq", &in::res_seq},
                                             {"leases", &in::leases},
                                             {"seq", &in::seq},
                                             {"outbox", &in::outbox}}};
  }
  static constexpr auto arg_fields() {
    using in = resource_release_inputs;
    return std::array<script_input<in>, 8>{{{"id", &in::id},
                                            {"wake_channel", &in::wake_channel},
                                            {"queue", &in::queue},
                                            {"source_arg", &in::source_arg},
                                            {"retention_arg", &in::retention_arg},
                                            {"bus_channel", &in::bus_channel},
                                            {"admission_arg", &in::admission_arg},
                                            {"reason", &in::reason}}};
  }
};
/// What a release names: a resource id, or an admission id (`admission` set, `resource`
/// empty); with a source index the holder gets an `expired` message with `reason`.
struct release_call {
  std::string resource;
  std::string admission;
  std::optional<long long> source;
  std::string reason = "released";  // or "revoked"
  long long outbox_retention_ms = 0;
};
resource_release_inputs resource_release_for(const keys& k, const std::string& queue,
                                             release_call c);
/// What was released (or, for an admission that had already ended, its state).
struct release_reply {
  std::string state;  // "released", or the ended admission's state
  std::string user, resource, admission, message_id;
};
outcome<release_reply> resource_release_reply(const redis::result& r);

// --- resource_remove.lua: take a resource out of the pool ---
/// lua/resource_remove.lua: its KEYS and ARGV, named and ordered as in the script's
/// opening lines.
struct resource_remove_inputs {
  static constexpr std::string_view script = "resource_remove";
  std::string res_meta{}, res_free{}, res_holder{}, assigned{}, pending{}, pending_ids{},
      admissions{}, leases{};  // KEYS
  std::string id{};            // ARGV
  /// The seven keys resource_release.lua names first, in the same order, then leases.
  static constexpr auto key_fields() {
    using in = resource_remove_inputs;
    return std::array<script_input<in>, 8>{{{"res_meta", &in::res_meta},
                                            {"res_free", &in::res_free},
                                            {"res_holder", &in::res_holder},
                                            {"assigned", &in::assigned},
                                            {"pending", &in::pending},
                                            {"pending_ids", &in::pending_ids},
                                            {"admissions", &in::admissions},
                                            {"leases", &in::leases}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<resource_remove_inputs>, 1>{
        {{"id", &resource_remove_inputs::id}}};
  }
};
resource_remove_inputs resource_remove_for(const keys& k, const std::string& queue, std::string id);
outcome<none> resource_remove_reply(const redis::result& r);

}  // namespace pushonce::lua
