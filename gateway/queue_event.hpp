#pragma once
// A queue event as the queue scripts publish it on the wake channel (lua/lib/prelude.lua,
// queue_event): "QUEUE SEQ KIND TICKET...", KIND 'j' (a ticket joined) or 'r' (tickets left
// the waiting list: left or assigned). Other wake payloads (a bare queue name: resources
// changed) carry no positions and parse to nothing.

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
};

/// nullopt for a bare queue name or anything malformed.
std::optional<queue_event> parse_queue_event(std::string_view payload);

}  // namespace pushonce::gateway
