#pragma once
// Where a Redis result becomes a pushonce failure: the one place Redis's error text is read
// for its meaning (core/errc.hpp keeps the result type free of the Redis client).

#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce {

/// The failure a Redis result stands for: a transport error → redis_unavailable; an error
/// reply that says Redis refuses work for now (OOM, BUSY, READONLY, CLUSTERDOWN, NOREPLICAS,
/// NOPERM, ...: redis/error_reply) → redis_unavailable; a script's own code ("<code> <message>",
/// e.g. "fenced ...") → that errc with the message; ERR, NOSCRIPT, WRONGTYPE and any other reply →
/// internal with the reply's text.
failure failure_of(const redis::result& r);

}  // namespace pushonce
