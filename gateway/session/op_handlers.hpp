#pragma once
// One handler per client op after hello (docs/protocol.md "Client → gateway"): join, leave,
// position, accept, ack, ping. Each runs the op against Redis and sends its answer through
// session_transport. What to answer for a given result (reply frame, error code) is decided by
// the plain reply_* functions, tested without sockets (tests/unit/test_gateway_op_handlers).

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/outcome.hpp"
#include "core/queue_api.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/protocol/protocol.hpp"
#include "gateway/session/session_services.hpp"
#include "gateway/session/token_expiry.hpp"

namespace pushonce::gateway {

class session_transport;

/// What a handler knows of its session.
struct op_context {
  const session_services& sv;
  session_transport& io;
  const std::string& user;
  const std::string& epoch;
  std::string_view log_name;  // the transport's ("ws", "sse"): its log lines' prefix
};

/// Runs one op (not hello) and sends its answer. refresh moves the session's token deadline
/// and is session_flow's (session_flow::on_refresh); here it is answered with error internal.
boost::asio::awaitable<void> handle_op(op_context ctx, client_op op);

boost::asio::awaitable<void> handle_join(op_context ctx, join_op op);
boost::asio::awaitable<void> handle_leave(op_context ctx, leave_op op);
boost::asio::awaitable<void> handle_position(op_context ctx, position_op op);
boost::asio::awaitable<void> handle_accept(op_context ctx, accept_op op);
boost::asio::awaitable<void> handle_ack(op_context ctx, ack_op op);
void handle_ping(op_context ctx);

// ---- decisions: the frame each result is answered with -----------------------------------

/// An error frame for a failure: the contract's code (client_error_code) and its message.
std::string reply_failure(const failure& f, std::string_view op);
/// True when a failure is the gateway's problem rather than the client's (logged).
bool is_internal(const failure& f);

/// eta_s: the estimated wait stamped on the answer (null when none).
std::string reply_join(std::string_view queue, const outcome<join_result>& r,
                       std::optional<long long> eta_s = std::nullopt);
std::string reply_leave(std::string_view queue, const outcome<none>& r);
std::string reply_position(std::string_view queue, const outcome<long long>& r);
/// The user's standing (waiting: position; pre-queued: position null and opens_at; else
/// error not_found).
std::string reply_standing(std::string_view queue, const std::string& user,
                           const outcome<queue_standing>& r,
                           std::optional<long long> eta_s = std::nullopt);
std::string reply_accept(const outcome<lua::accept_reply>& r);
/// An ack is not answered unless it failed.
std::optional<std::string> reply_ack(const outcome<none>& r);

/// The answer to a refresh and whether it was accepted.
struct refresh_reply {
  std::string frame;  // refreshed, or error bad_request
  bool accepted = false;
};
/// `verified` is the authenticator's verdict on the refresh token. Accepted (the token
/// verifies and names `user`): `expiry` follows its exp, the frame is `refreshed`. Else
/// error bad_request saying why, and `expiry` is unchanged (the session keeps its token).
refresh_reply reply_refresh(const outcome<identity>& verified, const std::string& user,
                            token_expiry& expiry);

}  // namespace pushonce::gateway
