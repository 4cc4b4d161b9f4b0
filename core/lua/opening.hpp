#pragma once
// The calls of lua/opening_draw.lua and lua/opening_move.lua (KEYS and ARGV order written
// once, here) and their replies: the leader's opening of a queue's pre-queue
// (leader/opening_plan decides which call comes next).

#include <optional>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// KEYS: settings, prequeue, prequeue:draw, fence; ARGV: token, after, draw keys...
redis::command opening_draw_command(const keys& k, const std::string& queue, long long token,
                                    long long after, const std::vector<long long>& draw_keys);

struct opening_draw_reply {
  long long after = 0;  // the join order to go on after
  long long drawn = 0;
  bool done = false;
  bool due = true;
};
std::optional<opening_draw_reply> parse_opening_draw_reply(const redis::reply& r);

/// KEYS: settings, prequeue, prequeue:draw, fence, waiting, ticket, events, prequeue:seq;
/// ARGV: token, max, wake channel, queue.
redis::command opening_move_command(const keys& k, const std::string& queue, long long token,
                                    long long max);

struct opening_move_reply {
  long long moved = 0;
  long long left = 0;  // still pre-queued (0: the queue is open)
  bool due = true;
  bool undrawn = false;
};
std::optional<opening_move_reply> parse_opening_move_reply(const redis::reply& r);

}  // namespace pushonce::lua
