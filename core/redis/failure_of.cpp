#include "core/redis/failure_of.hpp"

#include "core/redis/error.hpp"
#include "core/redis/error_reply.hpp"

namespace pushonce {

failure failure_of(const redis::result& r) {
  if (r.ec == redis::error::login_refused && !r.value.str.empty())
    return {errc::redis_unavailable, "Redis refused the login: " + r.value.str};
  // The text of a command that failed before it was sent says why (no connection to the
  // address tried, a refused login).
  if (r.ec)
    return {errc::redis_unavailable, "Redis did not answer: " + r.ec.message() +
                                         (r.value.str.empty() ? "" : " (" + r.value.str + ")")};
  if (!r.value.is_error()) return {errc::internal, "unexpected reply from Redis"};
  std::string code(r.value.error_code());
  // OOM, BUSY, READONLY, NOREPLICAS, NOPERM ...: Redis is there but refuses work for now
  // (the connection logs which, and reconnects after a failover).
  auto what = redis::classify_error_code(code);
  if (what == redis::error_reply_class::denied)
    return {errc::redis_unavailable,
            "Redis refused (an operator must grant the Redis user this command or key): " +
                r.value.str};
  if (what != redis::error_reply_class::ordinary)
    return {errc::redis_unavailable, "Redis refused: " + r.value.str};
  // Scripts answer "<code> <message>" with a code of the contract; Redis's own codes (ERR,
  // NOSCRIPT, WRONGTYPE, ...) are not ours: internal, with the whole reply.
  auto e = errc_of_code(code);
  if (!e) return {errc::internal, r.value.str};
  std::string message(r.value.error_message());
  return {*e, message.empty() ? code : message};
}

}  // namespace pushonce
