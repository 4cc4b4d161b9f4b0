#pragma once
// The WebSocket protocol of docs/protocol.md "WebSocket protocol" as plain data: parsing of
// client frames (one JSON object each) and rendering of the gateway's own frames. No
// sockets, no Redis: tested directly (tests/unit/test_gateway_protocol.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/errc.hpp"
#include "core/pow_challenge.hpp"

namespace pushonce::gateway {

struct since_position {
  std::string epoch;
  long long offset = 0;
};

struct hello_op {
  std::optional<std::string> token;  // JWT
  std::optional<std::string> user;   // --dev-auth only
  std::optional<since_position> since;
};
struct join_op {
  std::string queue;
  /// "pow":{"id","nonce"}; a "pow" that is not an object of two strings is kept with an
  /// empty nonce, so that pow_gate::verify answers malformed (and a fresh challenge).
  std::optional<pow_solution> pow;
};
struct leave_op {
  std::string queue;
};
struct position_op {
  std::string queue;
};
struct accept_op {
  std::string id;
  std::string queue;  // optional in the frame; default "default"
};
struct ack_op {
  long long offset = 0;
};
struct ping_op {};
/// {"op":"refresh","token":"JWT"}: the session follows this token from now on (its exp).
struct refresh_op {
  std::string token;
};

using client_op =
    std::variant<hello_op, join_op, leave_op, position_op, accept_op, ack_op, ping_op, refresh_op>;

/// Why a frame could not be understood; sent back as an error frame.
struct protocol_error {
  errc code = errc::bad_request;  // bad_request | unknown_op
  std::string message;
  std::string op;  // the op as given ("" when there is none)
};

using parse_result = std::variant<client_op, protocol_error>;

inline constexpr std::string_view default_queue = "default";

/// Parses one client frame. Queue names default to "default"; names are not validated here
/// (queue_api answers bad_request for a bad one).
parse_result parse_client_frame(std::string_view text);

/// The op name of a parsed frame ("hello", "join", ...).
std::string_view op_name(const client_op& op);

// Gateway → client frames.
std::string render_welcome(std::string_view user, std::string_view session, std::string_view epoch,
                           long long offset, bool recovered,
                           const pow_challenge* challenge = nullptr);
/// A join refused for its proof of work: error bad_request with a fresh "challenge".
std::string render_pow_refusal(std::string_view message, const pow_challenge& challenge);
/// {"type":"error","code":client_error_code(code),"message","op"}
std::string render_error(errc code, std::string_view message, std::string_view op);
/// eta_s: the estimated wait in whole seconds (core/wait_estimate), null when none.
std::string render_joined(std::string_view queue, long long position, long long ticket,
                          std::optional<long long> eta_s = std::nullopt);
std::string render_left(std::string_view queue);
/// {"type":"position","queue","position","eta_s"}, with "approx":true when the position is
/// rounded (far from the head: position_schedule's next_position_frame).
std::string render_position(std::string_view queue, long long position,
                            std::optional<long long> eta_s = std::nullopt, bool approx = false);
/// A pre-queued user: {"type":"joined","queue","position":null,"ticket":null,"eta_s":null,
/// "opens_at"} and {"type":"position","queue","position":null,"eta_s":null,"opens_at"} (opens_at
/// null when the queue is no longer in its pre-queue: closed while the user waited in it).
std::string render_joined_prequeue(std::string_view queue, std::optional<long long> opens_at);
std::string render_position_prequeue(std::string_view queue, std::optional<long long> opens_at);
/// With a lease, its end after the accept (ms since the epoch) as "expires_at".
std::string render_accepted(std::string_view id,
                            std::optional<long long> expires_at = std::nullopt);
std::string render_pong();
/// {"type":"refreshed","exp":MS}: a refresh was accepted; the token's exp in ms.
std::string render_refreshed(long long exp_ms);

/// The WebSocket edge of the error model: the code of an error frame for an errc.
/// already_queued / already_assigned → conflict, not_queued / not_found → not_found;
/// bad_request, unknown_op and rate_limited as they are; anything else (redis_unavailable,
/// internal, ...) → internal.
std::string_view client_error_code(errc e);

}  // namespace pushonce::gateway
