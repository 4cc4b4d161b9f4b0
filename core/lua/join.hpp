#pragma once
// The calls of the waiting line's scripts, lua/join.lua, lua/leave.lua and
// lua/standing.lua (KEYS and ARGV order written once, here), and their replies. The three
// share their first keys where they read the same ones (waiting, then events).

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

// --- join.lua: a user joins the waiting line (or the pre-queue) ---
/// lua/join.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct join_inputs {
  static constexpr std::string_view script = "join";
  static constexpr std::size_t required_args = 3;  // pow_ttl only with pow_used
  std::string waiting{}, assigned{}, ticket_counter{}, registered{}, events{}, settings{},
      prequeue{}, stats{}, prequeue_seq{},
      pow_used{};  // KEYS (pow_used: the proof of work's mark, or "")
  std::string user{}, wake{}, queue{}, pow_ttl{};  // ARGV (pow_ttl: ms the mark lives, or "")
  static constexpr auto key_fields() {
    using in = join_inputs;
    return std::array<script_input<in>, 10>{{{"waiting", &in::waiting},
                                             {"assigned", &in::assigned},
                                             {"ticket_counter", &in::ticket_counter},
                                             {"registered", &in::registered},
                                             {"events", &in::events},
                                             {"settings", &in::settings},
                                             {"prequeue", &in::prequeue},
                                             {"stats", &in::stats},
                                             {"prequeue_seq", &in::prequeue_seq},
                                             {"pow_used", &in::pow_used}}};
  }
  static constexpr auto arg_fields() {
    using in = join_inputs;
    return std::array<script_input<in>, 4>{{{"user", &in::user},
                                            {"wake", &in::wake},
                                            {"queue", &in::queue},
                                            {"pow_ttl", &in::pow_ttl}}};
  }
};
/// `pow`: the proof of work's token and the ms its single-use mark lives, if any.
join_inputs join_for(const keys& k, const std::string& queue, std::string user,
                     const std::optional<std::pair<std::string, long long>>& pow);
struct join_reply {
  long long position = 0;  // 0: pre-queued
  long long ticket = 0;
  long long event = 0;
  long long opens_at = 0;  // pre-queued: the opening time (ms)
};
outcome<join_reply> join_reply_of(const redis::result& r);

// --- leave.lua: a user leaves the waiting line or the pre-queue ---
/// lua/leave.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct leave_inputs {
  static constexpr std::string_view script = "leave";
  std::string waiting{}, events{}, prequeue{}, draw{};  // KEYS
  std::string user{}, wake{}, queue{};                  // ARGV
  static constexpr auto key_fields() {
    using in = leave_inputs;
    return std::array<script_input<in>, 4>{{{"waiting", &in::waiting},
                                            {"events", &in::events},
                                            {"prequeue", &in::prequeue},
                                            {"draw", &in::draw}}};
  }
  static constexpr auto arg_fields() {
    using in = leave_inputs;
    return std::array<script_input<in>, 3>{
        {{"user", &in::user}, {"wake", &in::wake}, {"queue", &in::queue}}};
  }
};
leave_inputs leave_for(const keys& k, const std::string& queue, std::string user);
/// The removal's event number (0 for a pre-queued user).
outcome<long long> leave_reply_of(const redis::result& r);

// --- standing.lua: where one user stands ---
/// lua/standing.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct standing_inputs {
  static constexpr std::string_view script = "standing";
  std::string waiting{}, events{}, prequeue{}, settings{};  // KEYS
  std::string user{};                                       // ARGV
  static constexpr auto key_fields() {
    using in = standing_inputs;
    return std::array<script_input<in>, 4>{{{"waiting", &in::waiting},
                                            {"events", &in::events},
                                            {"prequeue", &in::prequeue},
                                            {"settings", &in::settings}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<standing_inputs>, 1>{{{"user", &standing_inputs::user}}};
  }
};
standing_inputs standing_for(const keys& k, const std::string& queue, std::string user);
struct standing_reply {
  long long event = 0;
  long long position = 0;  // 0: not waiting
  long long ticket = 0;
  bool prequeued = false;
  long long opens_at = 0;  // 0: none
};
outcome<standing_reply> standing_reply_of(const redis::result& r);

}  // namespace pushonce::lua
