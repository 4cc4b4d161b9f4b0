#pragma once
// The life of one session (WebSocket or SSE) as a named state machine (no sockets): which phase it
// is in, what a client frame means in that phase, and when an inbox catch-up runs. The
// shells (websocket_session, sse_session) and the flows (session_flow) ask it instead of keeping
// flags.
//
//   handshake ─▶ awaiting_hello ─▶ authenticating ─▶ catching_up ⇄ live
//                                                        ▲ │
//                                        catch_up_again ─┘◀┘ (a catch-up was requested
//                                                             while one runs)
//   any phase ─▶ closing (terminal)
//
// - awaiting_hello: the first frame must be a text frame holding hello (else 1008).
// - authenticating: hello received; auth, session.lua, the route, the first inbox page.
//   Live frames are not routed to the session yet.
// - catching_up / catch_up_again: welcome sent (or about to be); the inbox is replayed,
//   live frames are buffered by resume_state.
// - live: live frames go straight to the send queue.
// - closing: nothing more is sent or acted on.

#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/protocol/protocol.hpp"

namespace pushonce::gateway {

enum class session_phase : std::uint8_t {
  handshake,
  awaiting_hello,
  authenticating,
  catching_up,
  catch_up_again,
  live,
  closing,
};

std::string_view to_string(session_phase p);

/// What the session does with one client frame.
struct frame_decision {
  enum class action : std::uint8_t {
    ignore,        // closing: frames are read (to see the close) but not acted on
    close_policy,  // close with 1008 and `message` (after an error frame when `error` has a
                   // message)
    error,         // send an error frame {code, message, op}; the connection stays open
    hello,         // run the hello flow with `op`
    dispatch,      // run the op handler of `op`
  };
  action what = action::ignore;
  client_op op;
  protocol_error error;  // for action::error (and a malformed hello's close_policy)
  std::string message;   // for action::close_policy
};

class session_machine {
 public:
  session_phase phase() const { return phase_; }
  bool closing() const { return phase_ == session_phase::closing; }
  /// Live frames reach the session (the route exists and it is not closing).
  bool routed() const;
  /// A catch-up coroutine is running.
  bool catching_up() const {
    return phase_ == session_phase::catching_up || phase_ == session_phase::catch_up_again;
  }

  /// The WebSocket handshake completed: the hello deadline starts.
  void on_handshake();
  /// Decides on one client frame; a hello in awaiting_hello moves to authenticating.
  frame_decision on_frame(std::string_view text, bool is_text);
  /// The user's channel is routed to the session: the first catch-up starts.
  void on_routed();
  /// A catch-up was requested (subscriber reconnect, offset gap). true: start a catch-up
  /// coroutine now (the session was live); false: none to start (one runs and will run
  /// again, or the session is not that far, or closing).
  bool request_catch_up();
  /// A catch-up pass ended. true: run another pass (one was requested meanwhile); false:
  /// the session is live (or closing).
  bool finish_catch_up();
  /// Starts closing; false when it already was.
  bool close();

 private:
  session_phase phase_ = session_phase::handshake;
};

}  // namespace pushonce::gateway
