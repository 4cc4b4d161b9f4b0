#include "gateway/queue/ticket_follow.hpp"

namespace pushonce::gateway {

std::optional<ticket_move> follow_ticket(long long watching, long long ticket, long long position) {
  if (position <= 0 || ticket == watching) return std::nullopt;
  return ticket_move{watching, ticket};
}

}  // namespace pushonce::gateway
