#pragma once
// The calls of the presence scripts (lua/presence_*.lua) and of lua/abandon.lua, KEYS and
// ARGV order written once, here, with their reply parsers (docs/data-model.md, "Presence").
// Presence is one slot, {presence}: who has how many sessions open on all gateways, on
// each gateway instance, and since when a user has had none.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/presence_open.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct presence_open_inputs {
  static constexpr std::string_view script = "presence_open";
  std::string count{}, gateway{}, gateways{}, absent{};  // KEYS
  std::string user{}, instance{};                        // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<presence_open_inputs>, 4>{
        {{"count", &presence_open_inputs::count},
         {"gateway", &presence_open_inputs::gateway},
         {"gateways", &presence_open_inputs::gateways},
         {"absent", &presence_open_inputs::absent}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<presence_open_inputs>, 2>{
        {{"user", &presence_open_inputs::user}, {"instance", &presence_open_inputs::instance}}};
  }
};

/// lua/presence_close.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct presence_close_inputs {
  static constexpr std::string_view script = "presence_close";
  std::string count{}, gateway{}, absent{};  // KEYS
  std::string user{};                        // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<presence_close_inputs>, 3>{
        {{"count", &presence_close_inputs::count},
         {"gateway", &presence_close_inputs::gateway},
         {"absent", &presence_close_inputs::absent}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<presence_close_inputs>, 1>{
        {{"user", &presence_close_inputs::user}}};
  }
};

/// lua/presence_joined.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct presence_joined_inputs {
  static constexpr std::string_view script = "presence_joined";
  std::string count{}, absent{};  // KEYS
  std::string user{};             // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<presence_joined_inputs>, 2>{
        {{"count", &presence_joined_inputs::count}, {"absent", &presence_joined_inputs::absent}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<presence_joined_inputs>, 1>{
        {{"user", &presence_joined_inputs::user}}};
  }
};

/// lua/presence_fold.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct presence_fold_inputs {
  static constexpr std::string_view script = "presence_fold";
  std::string count{}, gateway{}, gateways{}, absent{};  // KEYS
  std::string instance{}, cursor{}, batch_arg{};         // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<presence_fold_inputs>, 4>{
        {{"count", &presence_fold_inputs::count},
         {"gateway", &presence_fold_inputs::gateway},
         {"gateways", &presence_fold_inputs::gateways},
         {"absent", &presence_fold_inputs::absent}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<presence_fold_inputs>, 3>{
        {{"instance", &presence_fold_inputs::instance},
         {"cursor", &presence_fold_inputs::cursor},
         {"batch_arg", &presence_fold_inputs::batch_arg}}};
  }
};

/// lua/presence_reclaim.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct presence_reclaim_inputs {
  static constexpr std::string_view script = "presence_reclaim";
  std::string count{}, gateway{}, gateways{}, absent{};  // KEYS
  std::string instance{};                                // ARGV
  std::vector<std::string> more_args{};                  // ARGV after the named ones
  static constexpr auto key_fields() {
    return std::array<script_input<presence_reclaim_inputs>, 4>{
        {{"count", &presence_reclaim_inputs::count},
         {"gateway", &presence_reclaim_inputs::gateway},
         {"gateways", &presence_reclaim_inputs::gateways},
         {"absent", &presence_reclaim_inputs::absent}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<presence_reclaim_inputs>, 1>{
        {{"instance", &presence_reclaim_inputs::instance}}};
  }
};

/// lua/presence_drop.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct presence_drop_inputs {
  static constexpr std::string_view script = "presence_drop";
  std::string absent{};                  // KEYS
  std::string horizon_arg{}, max_arg{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<presence_drop_inputs>, 1>{
        {{"absent", &presence_drop_inputs::absent}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<presence_drop_inputs>, 2>{
        {{"horizon_arg", &presence_drop_inputs::horizon_arg},
         {"max_arg", &presence_drop_inputs::max_arg}}};
  }
};

/// lua/abandon.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct abandon_inputs {
  static constexpr std::string_view script = "abandon";
  std::string waiting{}, events{}, pending{}, stats{}, fence{}, prequeue{}, draw{};  // KEYS
  std::string queue{}, wake{}, token_arg{};                                          // ARGV
  std::vector<std::string> more_args{};  // ARGV after the named ones
  static constexpr auto key_fields() {
    return std::array<script_input<abandon_inputs>, 7>{{{"waiting", &abandon_inputs::waiting},
                                                        {"events", &abandon_inputs::events},
                                                        {"pending", &abandon_inputs::pending},
                                                        {"stats", &abandon_inputs::stats},
                                                        {"fence", &abandon_inputs::fence},
                                                        {"prequeue", &abandon_inputs::prequeue},
                                                        {"draw", &abandon_inputs::draw}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<abandon_inputs>, 3>{{{"queue", &abandon_inputs::queue},
                                                        {"wake", &abandon_inputs::wake},
                                                        {"token_arg", &abandon_inputs::token_arg}}};
  }
};

/// NS:{presence}:suffix: suffix "count", "absent", "gws", "gw:<instance>".
std::string presence_key(const keys& k, std::string_view suffix);

/// presence_open.lua: a session of `user` opened on gateway instance `instance`.
presence_open_inputs presence_open_for(const keys& k, const std::string& user,
                                       const std::string& instance);
/// presence_close.lua: that session ended.
presence_close_inputs presence_close_for(const keys& k, const std::string& user,
                                         const std::string& instance);
/// presence_joined.lua: `user` joined a queue without a session: absent from now unless it
/// has one open.
presence_joined_inputs presence_joined_for(const keys& k, const std::string& user);

/// presence_fold.lua: a dead instance's sessions counted closed, `batch` users per call.
presence_fold_inputs presence_fold_for(const keys& k, const std::string& instance,
                                       const std::string& cursor, long long batch);
struct fold_reply {
  std::string cursor;  // pass to the next call
  long long folded = 0;
  bool done = false;  // the instance is gone from NS:{presence}:gws
};
std::optional<fold_reply> parse_fold_reply(const redis::reply& r);

/// presence_reclaim.lua: a live instance that was folded counts its sessions again
/// (`sessions`: user -> sessions open on it; at most 1000 per call).
presence_reclaim_inputs presence_reclaim_for(
    const keys& k, const std::string& instance,
    const std::vector<std::pair<std::string, std::size_t>>& sessions);

/// presence_drop.lua: forget up to `max` absent users whose absence began before `horizon`.
presence_drop_inputs presence_drop_for(const keys& k, long long horizon_ms, long long max);

/// ZRANGEBYSCORE NS:{presence}:absent min max WITHSCORES LIMIT 0 limit (no limit when
/// `limit` is 0): the absent users and the ms their absence began, oldest first.
redis::command absent_range_command(const keys& k, const std::string& min, const std::string& max,
                                    long long limit);
struct absent_user {
  std::string user;
  long long since = 0;  // ms
  bool operator==(const absent_user&) const = default;
};
std::optional<std::vector<absent_user>> parse_absent_range(const redis::reply& r);

/// abandon.lua: `users` (at most 1000) leave `queue` for want of a session.
abandon_inputs abandon_for(const keys& k, const std::string& queue, long long fencing_token,
                           const std::vector<std::string>& users);
struct abandon_reply {
  long long removed = 0;  // from the waiting list
  long long ended = 0;    // assignments handed to expire.lua
};
std::optional<abandon_reply> parse_abandon_reply(const redis::reply& r);

/// A gateway's presence instance: "<gateway id>~<boot>", new for every process, so that a
/// gateway restarted under the same --id never inherits a dead process's sessions.
std::string presence_instance(std::string_view gateway_id, std::string_view boot);
/// The gateway id of an instance (the text before the last '~'); empty when there is none.
std::string gateway_of_instance(std::string_view instance);

}  // namespace pushonce::lua
