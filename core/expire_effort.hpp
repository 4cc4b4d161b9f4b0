#pragma once
// Whether the Redis a worker runs on reclaims expired claim records fast enough. Claim
// records expire in a steady stream under sustained load; at Redis's default
// active-expire-effort (1) its active expiry falls behind them and the keyspace overshoots
// the live count (docs/operations.md "Redis memory"). Socket-free: the worker asks
// `CONFIG GET active-expire-effort` and logs what this says.

#include <optional>
#include <string>

#include "core/redis/reply.hpp"

namespace pushonce {

/// The active-expire-effort docs/operations.md recommends for sustained load.
inline constexpr long long recommended_expire_effort = 10;

/// A warning to log when the reply to `CONFIG GET active-expire-effort` shows an effort
/// below the recommended one; std::nullopt when it is enough, or when the reply says
/// nothing (an error: CONFIG may be refused, as on managed Redis services; a Redis without
/// the setting).
std::optional<std::string> expire_effort_warning(const redis::reply& r);

}  // namespace pushonce
