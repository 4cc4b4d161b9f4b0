#pragma once
// What a connection holds of the gateway's limits: the client's address (client_address)
// and its counted slots, given back when the connection (HTTP or WebSocket) ends.

#include <string>

#include "gateway/limits/slot_counter.hpp"

namespace pushonce::gateway {

struct connection_info {
  std::string client;             // the client's address, for logs and the per-address caps
  slot_counter::slot connection;  // gateway_state::connections, under the TCP peer
  slot_counter::slot forwarded;   // gateway_state::forwarded_connections, under the client
                                  // a trusted proxy names (admission.hpp)
  slot_counter::slot session;     // gateway_state::sessions_per_ip (WebSocket only)
};

}  // namespace pushonce::gateway
