#pragma once
// The calls of lua/resource_add.lua, lua/resource_release.lua and lua/resource_remove.lua
// (KEYS and ARGV order written once, here) and their replies: a queue's resource pool.
// resource_release and resource_remove share their first seven keys, in the same order.

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

// --- resource_add.lua: add free resources, all or nothing ---
struct resource_add_input {
  // KEYS
  std::string res_meta;
  std::string res_free;
  std::string res_seq;
  // ARGV
  std::string wake_channel;
  std::string queue;
  std::string meta;              // JSON (validated) or ""
  std::vector<std::string> ids;  // variadic tail
};
inline constexpr std::array<std::string_view, 3> resource_add_key_names{"res_meta", "res_free",
                                                                        "res_seq"};
inline constexpr std::array<std::string_view, 4> resource_add_arg_names{"wake_channel", "queue",
                                                                        "meta", "ids..."};
resource_add_input resource_add_for(const keys& k, const std::string& queue,
                                    std::vector<std::string> ids, std::string meta_json);
script_call resource_add_call(resource_add_input in);
/// The number of resources added (a failure as the script returned it: `exists <id>`).
outcome<long long> resource_add_reply(const redis::result& r);

// --- resource_release.lua: the holder is done, the resource is free again ---
struct resource_release_input {
  // KEYS
  std::string res_meta;
  std::string res_free;
  std::string res_holder;
  std::string assigned;
  std::string pending;
  std::string pending_ids;
  std::string admissions;
  std::string res_seq;
  // ARGV
  std::string id;
  std::string wake_channel;
  std::string queue;
};
inline constexpr std::array<std::string_view, 8> resource_release_key_names{
    "res_meta", "res_free",    "res_holder", "assigned",
    "pending",  "pending_ids", "admissions", "res_seq"};
inline constexpr std::array<std::string_view, 3> resource_release_arg_names{"id", "wake_channel",
                                                                            "queue"};
resource_release_input resource_release_for(const keys& k, const std::string& queue,
                                            std::string id);
script_call resource_release_call(resource_release_input in);
outcome<none> resource_release_reply(const redis::result& r);

// --- resource_remove.lua: take a resource out of the pool ---
struct resource_remove_input {
  // KEYS
  std::string res_meta;
  std::string res_free;
  std::string res_holder;
  std::string assigned;
  std::string pending;
  std::string pending_ids;
  std::string admissions;
  // ARGV
  std::string id;
};
inline constexpr std::array<std::string_view, 7> resource_remove_key_names{
    "res_meta", "res_free", "res_holder", "assigned", "pending", "pending_ids", "admissions"};
inline constexpr std::array<std::string_view, 1> resource_remove_arg_names{"id"};
resource_remove_input resource_remove_for(const keys& k, const std::string& queue, std::string id);
script_call resource_remove_call(resource_remove_input in);
outcome<none> resource_remove_reply(const redis::result& r);

}  // namespace pushonce::lua
