#pragma once
// The one error enum of pushonce: every refusal or failure a program answers or branches on
// (docs/protocol.md names them), carried as a value (core/outcome.hpp: a
// boost::system::result). A boost::system error category, so an errc converts to an
// error_code where one is wanted.
//
// Text exists only at the edges, each written once from the errc: the contract's code word
// (code_text: the CLI's `error: <code>:` line and its --json "error"), the HTTP answer
// (gateway/protocol/http_error), the WebSocket error frame's code (gateway/protocol/protocol
// client_error_code). Redis error replies become an errc in one place
// (core/redis/failure_of).
//
// Exceptions are not errors of this kind: they stay for start-up and configuration
// failures (a bad option, an unreadable secret: the program exits 2 before it serves) and
// for programming errors (a broken invariant); never for a request a client or operator can
// get wrong, nor for Redis answering badly.

#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>
#include <optional>
#include <string_view>
#include <type_traits>

namespace pushonce {

enum class errc {
  bad_request = 1,    // bad input: a name, a body, a script argument
  usage,              // a bad command line
  too_large,          // data over --max-data-bytes, a body over its limit
  rate_limited,       // over a token bucket: retry later
  unauthorized,       // a missing or wrong API key, admin token or JWT
  auth_failed,        // a hello refused (the session closes 1008)
  forbidden,          // a route without its secret configured, an Origin refused
  no_secret,          // `token` without PUSHONCE_JWT_SECRET
  unknown_op,         // a client frame whose op is not one
  not_found,          // no such route, queue, assignment, dead letter ...
  not_queued,         // the user does not wait in the queue
  not_assigned,       // the user holds no assignment
  not_dead,           // a replay of a message that was delivered or already replayed
  already_queued,     // the user already waits
  already_assigned,   // the user already holds a resource
  exists,             // a resource id already known
  exhausted,          // no source index left
  fenced,             // a newer leader has acted on the queue
  overloaded,         // over the gateway's connection or session limits
  redis_unavailable,  // Redis did not answer, or refuses work for now (OOM, BUSY, failover)
  internal,           // anything else: the program's problem, not the caller's
};

const boost::system::error_category& errc_category() noexcept;
boost::system::error_code make_error_code(errc e) noexcept;

/// The contract's word for an errc ("bad_request", "redis_unavailable", ...): what the CLI
/// prints and what scripts answer in their error replies.
std::string_view code_text(errc e) noexcept;
/// The errc a code word names (a script's error reply); exact, std::nullopt when none.
std::optional<errc> errc_of_code(std::string_view code) noexcept;

}  // namespace pushonce

template <>
struct boost::system::is_error_code_enum<pushonce::errc> : std::true_type {};
