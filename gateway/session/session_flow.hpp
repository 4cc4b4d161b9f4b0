#pragma once
// The protocol side of one session (WebSocket or SSE), without the socket: what a client frame
// does (session_machine decides, op_handlers act), hello and resume (session.lua, routing
// of the user's channel, welcome, inbox replay, then the live stream without gap or
// duplicate: resume_state), later catch-ups, and live frames. It carries its decisions out
// through session_transport; all of it runs on the session's strand.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/limits/frame_limiter.hpp"
#include "gateway/limits/slot_counter.hpp"
#include "gateway/protocol/protocol.hpp"
#include "gateway/session/resume_state.hpp"
#include "gateway/session/session_machine.hpp"
#include "gateway/session/session_presence.hpp"
#include "gateway/session/session_services.hpp"
#include "gateway/session/token_expiry.hpp"
#include "gateway/state/inbox.hpp"

namespace pushonce::gateway {

class session_handle;
class session_transport;

class session_flow {
 public:
  using frame_ptr = std::shared_ptr<const std::string>;

  /// `log_name` is the transport's ("ws", "sse"): its log lines' prefix.
  session_flow(session_services sv, session_transport& io, std::string_view log_name);

  session_machine& machine() { return machine_; }
  const session_machine& machine() const { return machine_; }
  const std::string& user() const { return user_; }

  /// One complete client frame (read loop).
  boost::asio::awaitable<void> on_frame(std::string text, bool is_text);
  /// The same, with the op's answer (reply and error frames) sent through `out` instead of the
  /// session's transport (POST /sse/op answers in its HTTP response); closes still go to the
  /// session.
  boost::asio::awaitable<void> on_frame(std::string text, bool is_text, session_transport& out);
  /// A frame of the user's channel.
  void on_live(const frame_ptr& f);
  /// Re-read the inbox after the last offset sent (subscriber reconnect, offset gap).
  void request_catch_up();
  /// The connection ended: stop watching positions, stop routing the user's channel.
  void end(const session_handle* self);
  /// A refresh op: verify the token (no Redis call), answer refreshed or error bad_request
  /// on `out` (the transport the op came in on), and on acceptance re-arm the expiry timer
  /// for the new token's exp.
  void on_refresh(std::string token, session_transport& out);
  /// The session's token deadline (token_expiry): none for a session without a token.
  const token_expiry& expiry() const { return expiry_; }

 private:
  boost::asio::awaitable<void> on_hello(hello_op h);
  /// Sends `page` and the pages after it, pacing on the send queue; false on a failure.
  boost::asio::awaitable<bool> replay(inbox_page page);
  /// Catch-up passes while one is requested (session_machine::finish_catch_up).
  boost::asio::awaitable<void> catch_up_passes();
  /// Sends what the catch-up pass freed; closes on a gap it cannot fill, asks for one more
  /// pass on a hole that may yet fill.
  void flush_buffered();
  /// The next offset cannot be sent (trimmed from the inbox, or the inbox unreadable):
  /// close 1013; the client resumes and its welcome says recovered:false when it lost any.
  void on_catch_up_failed(const char* why);
  /// The user's offsets went back (resume_state regressed, or the offset counter is behind
  /// what was sent): rotate the epoch (session.lua), then close 1013 so the client comes
  /// back through hello and gets recovered:false. Once per session.
  void on_offsets_went_back(const char* why);
  /// Presence (docs/data-model.md): one presence_open.lua call once the session is live,
  /// one presence_close.lua call when it ends; the user is absent at its last close.
  void presence_open();
  void presence_close();
  /// The frame rate limits (frame_limiter); false when the frame is not to be acted on.
  bool within_rate(const frame_decision& d, session_transport& out);
  /// (Re-)arms the expiry timer for token_expiry's deadline; cancels it when there is none.
  void arm_expiry();
  /// The timer fired: close 1008 "token expired" past the deadline, else re-arm.
  void on_expiry_timer();

  // websocket::close_code::policy_error and try_again_later
  static constexpr std::uint16_t close_policy = 1008;
  static constexpr std::uint16_t close_try_again = 1013;

  session_services sv_;
  session_transport& io_;
  std::string_view log_name_;
  session_machine machine_;
  resume_state resume_;
  frame_limiter limiter_;
  token_expiry expiry_;
  // The expiry timer, made for a session with a token only (a session without one pays a
  // pointer); it holds no reference to the session.
  std::unique_ptr<boost::asio::steady_timer> expiry_timer_;
  slot_counter::slot user_slot_;  // session_services::sessions_per_user, from hello on
  std::string user_, session_id_, epoch_;
  std::optional<long long> iat_;  // the token's, for the check after routing
  bool went_back_ = false;        // on_offsets_went_back ran
  session_presence presence_;     // presence_open / presence_close, retried until they land
};

}  // namespace pushonce::gateway
