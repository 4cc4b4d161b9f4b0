#pragma once
// A queue event as the queue scripts publish it on the wake channel (lua/lib/prelude.lua,
// queue_event): "QUEUE SEQ KIND TICKET...", KIND 'j' (a ticket joined) or 'r' (tickets left
// the waiting list: left or assigned), or "QUEUE SEQ m POSITION TICKET USER..." (pre-queued
// users moved to the tail at an opening, lua/opening_move.lua: the first at POSITION with
// TICKET, each next one a place and a ticket further). Other wake payloads (a bare queue name:
// resources changed) carry no positions and parse to nothing.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce::gateway {

struct queue_event {
  std::string queue;
  long long seq = 0;
  bool removal = false;
  std::vector<long long> tickets;
  // 'm' (a join of several tickets at the tail, for the positions already watched):
  struct moved_users {
    long long position = 0;  // of users[0]
    long long ticket = 0;    // of users[0]
    std::vector<std::string> users;
  };
  std::optional<moved_users> moved;
};

/// nullopt for a bare queue name or anything malformed.
std::optional<queue_event> parse_queue_event(std::string_view payload);

}  // namespace pushonce::gateway
