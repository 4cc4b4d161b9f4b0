#pragma once
// What a session's protocol side (session_flow, op_handlers) uses of the gateway: the few
// settings, counters and services a hello, an op or a catch-up calls, not the whole
// gateway_state. Built by session_services_of (the transports' shell) from the state the
// server built; the services outlive every session.

#include <memory>
#include <string>

#include "core/keys.hpp"
#include "core/queue_api.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

struct identity;
class presence_ledger;

struct session_services {
  const gateway_settings& settings;
  gateway_metrics& metrics;
  // Presence (presence_open.lua / presence_close.lua): its keys, this process's instance
  // (empty: sessions not counted) and the command connection.
  const pushonce::keys& keys;
  const std::string& presence_instance;
  const std::shared_ptr<redis::connection>& conn;
  const std::shared_ptr<presence_ledger>& presence;  // the sessions counted here
  authenticator* auth;
  const revocations& revoked_users;
  session_registry& registry;
  inbox* inboxes;
  queue_api* queues;
  position_notifier* positions;
  join_pow* pow;                    // proof of work at join (null: never asked)
  slot_counter* sessions_per_user;  // after hello

  /// The identity's token is revoked (revocations::revoked): checked at hello and refresh.
  bool revoked(const identity& who) const;
};

/// The services of `st` a session uses.
session_services session_services_of(gateway_state& st);

}  // namespace pushonce::gateway
