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
struct join_input {
  // KEYS
  std::string waiting;
  std::string assigned;
  std::string ticket_counter;
  std::string registered;
  std::string events;
  std::string settings;
  std::string prequeue;
  std::string stats;
  std::string prequeue_seq;
  std::optional<std::string> pow_used;  // the proof of work's single-use mark
  // ARGV
  std::string user;
  std::string wake;
  std::string queue;
  std::optional<long long> pow_ttl;  // ms the mark lives (with pow_used)
};
inline constexpr std::array<std::string_view, 10> join_key_names{
    "waiting",  "assigned", "ticket_counter", "registered",   "events",
    "settings", "prequeue", "stats",          "prequeue_seq", "pow_used"};
inline constexpr std::array<std::string_view, 4> join_arg_names{"user", "wake", "queue", "pow_ttl"};
/// `pow`: the proof of work's token and the ms its single-use mark lives, if any.
join_input join_for(const keys& k, const std::string& queue, std::string user,
                    const std::optional<std::pair<std::string, long long>>& pow);
script_call join_call(join_input in);
struct join_reply {
  long long position = 0;  // 0: pre-queued
  long long ticket = 0;
  long long event = 0;
  long long opens_at = 0;  // pre-queued: the opening time (ms)
};
outcome<join_reply> join_reply_of(const redis::result& r);

// --- leave.lua: a user leaves the waiting line or the pre-queue ---
struct leave_input {
  // KEYS
  std::string waiting;
  std::string events;
  std::string prequeue;
  std::string draw;
  // ARGV
  std::string user;
  std::string wake;
  std::string queue;
};
inline constexpr std::array<std::string_view, 4> leave_key_names{"waiting", "events", "prequeue",
                                                                 "draw"};
inline constexpr std::array<std::string_view, 3> leave_arg_names{"user", "wake", "queue"};
leave_input leave_for(const keys& k, const std::string& queue, std::string user);
script_call leave_call(leave_input in);
/// The removal's event number (0 for a pre-queued user).
outcome<long long> leave_reply_of(const redis::result& r);

// --- standing.lua: where one user stands ---
struct standing_input {
  // KEYS
  std::string waiting;
  std::string events;
  std::string prequeue;
  std::string settings;
  // ARGV
  std::string user;
};
inline constexpr std::array<std::string_view, 4> standing_key_names{"waiting", "events", "prequeue",
                                                                    "settings"};
inline constexpr std::array<std::string_view, 1> standing_arg_names{"user"};
standing_input standing_for(const keys& k, const std::string& queue, std::string user);
script_call standing_call(standing_input in);
struct standing_reply {
  long long event = 0;
  long long position = 0;  // 0: not waiting
  long long ticket = 0;
  bool prequeued = false;
  long long opens_at = 0;  // 0: none
};
outcome<standing_reply> standing_reply_of(const redis::result& r);

}  // namespace pushonce::lua
