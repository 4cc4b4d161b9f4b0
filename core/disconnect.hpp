#pragma once
// Disconnecting (and revoking) a user, shared by POST /api/disconnect and
// `pushonce-leader disconnect`: checks the input, runs lua/revoke.lua; a revoke also
// releases the user's live admissions in every registered queue (reason "revoked").

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "core/keys.hpp"
#include "core/lua/revoke.hpp"
#include "core/outcome.hpp"
#include "core/retention.hpp"

namespace pushonce {

namespace redis {
class connection;
}

/// A revocation's lifetime when the gateway has no --jwt-max-lifetime and the CLI no --for:
/// 24 hours (a token older than that is refused anyway by a gateway with that cap).
inline constexpr std::chrono::seconds default_revocation_lifetime{24 * 3600};
/// The longest lifetime revoke.lua accepts: 365 days.
inline constexpr std::chrono::seconds max_revocation_lifetime{365LL * 24 * 3600};

/// bad_request for an invalid user name or a lifetime outside 1 s..365 days (with revoke);
/// redis_unavailable / internal from Redis. `outbox` is the retention the releases of a
/// revoke trim the queue's outbox by (the process's --outbox-retention-ms).
boost::asio::awaitable<outcome<lua::revoke_reply>> disconnect_user(
    std::shared_ptr<redis::connection> conn, keys k, std::string user, bool revoke,
    std::chrono::seconds lifetime, retention outbox = {});

}  // namespace pushonce
