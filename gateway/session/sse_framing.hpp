#pragma once
// The SSE transport of a session (docs/protocol.md "SSE transport") as plain data: how a
// gateway frame becomes an event, the close event, the keep-alive comment, the since of
// `?since=` / `Last-Event-ID`, the query of `GET /sse` and the body of `POST /sse/op`. No
// sockets: tested directly (tests/unit/test_gateway_sse_framing.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/protocol/protocol.hpp"

namespace pushonce::gateway {

/// The "type" of a gateway frame rendered with "type" as its first member ("" when not).
std::string_view sse_frame_type(std::string_view frame);

/// One event: `id:` (messages: EPOCH:OFFSET), `event:` (every other type), then the frame as
/// `data:` lines (a frame holding a line break is split into several data lines, so no line
/// of it can be read as a field), then the blank line.
std::string render_sse_event(std::string_view frame, std::string_view epoch);

/// The end of a stream closed by the gateway: `event: error` with
/// {"type":"error","code":"closed","close":CODE,"message":REASON}.
std::string render_sse_close(std::uint16_t code, std::string_view reason);

/// The keep-alive comment line (sent at least every 25 s).
inline constexpr std::string_view sse_keepalive = ": keep-alive\n\n";

/// "EPOCH:OFFSET" (an event id): the epoch is not empty and has no ':' nor space, the offset
/// is a non-negative decimal integer. nullopt when it is not.
std::optional<since_position> parse_sse_event_id(std::string_view id);

/// `GET /sse?token=JWT&user=U&since=EPOCH:OFFSET` with `Last-Event-ID` (the header wins over
/// ?since: it is what EventSource sends on a reconnect).
struct sse_query {
  hello_op hello;
  std::string error;  // not empty: answered 400 with it
};
sse_query parse_sse_query(std::string_view target, std::string_view last_event_id);

/// The hello frame the session runs for the query (hello_op as JSON).
std::string sse_hello_frame(const hello_op& h);

/// `POST /sse/op` {"session":"S","op":...,"user":"U"?, <op fields>}: the session, the
/// --dev-auth user when given, and the body itself as the op frame (the session's op parser
/// ignores the extra members).
struct sse_op_request {
  std::string session;
  std::optional<std::string> user;
  std::string error;  // not empty: answered 400 with it
};
sse_op_request parse_sse_op(std::string_view body);

/// The value of a query parameter of `target`, percent-decoded (nullopt when absent).
std::optional<std::string> sse_query_param(std::string_view target, std::string_view name);

/// "Bearer JWT" → JWT (nullopt when the header is not a bearer token).
std::optional<std::string> sse_bearer_token(std::string_view authorization);

}  // namespace pushonce::gateway
