#pragma once
// The I/O of revocations on a gateway: the control channel's messages carried out (close the
// user's sessions here, remember a revocation) and the snapshot of NS:{revoked} loaded at
// start and after every reconnect of the subscriber (a broadcast may have been missed).
// The decisions are gateway/auth/revocations.

#include <boost/asio/awaitable.hpp>
#include <string>

namespace pushonce::gateway {

struct gateway_state;

/// A message of the control channel (lua/revoke.lua); a malformed one is logged and ignored.
void on_control_message(gateway_state& st, const std::string& payload);
/// Reads NS:{revoked} and merges it into st.revoked_users; a failure is logged (the next
/// reconnect reads it again).
boost::asio::awaitable<void> load_revocations(gateway_state& st);

}  // namespace pushonce::gateway
