#include "gateway/session/session_machine.hpp"

namespace pushonce::gateway {

std::string_view to_string(session_phase p) {
  switch (p) {
    case session_phase::handshake:
      return "handshake";
    case session_phase::awaiting_hello:
      return "awaiting_hello";
    case session_phase::authenticating:
      return "authenticating";
    case session_phase::catching_up:
      return "catching_up";
    case session_phase::catch_up_again:
      return "catch_up_again";
    case session_phase::live:
      return "live";
    case session_phase::closing:
      return "closing";
  }
  return "?";
}

bool session_machine::routed() const {
  return phase_ == session_phase::catching_up || phase_ == session_phase::catch_up_again ||
         phase_ == session_phase::live;
}

void session_machine::on_handshake() {
  if (phase_ == session_phase::handshake) phase_ = session_phase::awaiting_hello;
}

frame_decision session_machine::on_frame(std::string_view text, bool is_text) {
  using action = frame_decision::action;
  frame_decision d;
  switch (phase_) {
    case session_phase::closing:
    case session_phase::handshake:
      return d;
    case session_phase::awaiting_hello: {
      d.what = action::close_policy;
      d.message = "the first frame must be hello";
      if (!is_text) return d;
      auto parsed = parse_client_frame(text);
      if (auto* err = std::get_if<protocol_error>(&parsed); err && err->op == "hello") {
        // A malformed hello (e.g. a since offset out of range): say why, then close.
        d.error = std::move(*err);
        d.message = d.error.message;
        return d;
      }
      auto* op = std::get_if<client_op>(&parsed);
      if (!op || !std::holds_alternative<hello_op>(*op)) return d;
      phase_ = session_phase::authenticating;
      d.what = action::hello;
      d.op = std::move(*op);
      d.message.clear();
      return d;
    }
    default:
      break;
  }
  if (!is_text) {
    d.what = action::error;
    d.error = {errc::bad_request, "binary frames are not supported", ""};
    return d;
  }
  auto parsed = parse_client_frame(text);
  if (auto* err = std::get_if<protocol_error>(&parsed)) {
    d.what = action::error;
    d.error = std::move(*err);
    return d;
  }
  auto& op = std::get<client_op>(parsed);
  if (std::holds_alternative<hello_op>(op)) {
    d.what = action::error;
    d.error = {errc::bad_request, "hello was already received", "hello"};
    return d;
  }
  d.what = action::dispatch;
  d.op = std::move(op);
  return d;
}

void session_machine::on_routed() {
  if (phase_ == session_phase::authenticating) phase_ = session_phase::catching_up;
}

bool session_machine::request_catch_up() {
  switch (phase_) {
    case session_phase::live:
      phase_ = session_phase::catching_up;
      return true;
    case session_phase::catching_up:
      phase_ = session_phase::catch_up_again;
      return false;
    default:
      return false;
  }
}

bool session_machine::finish_catch_up() {
  switch (phase_) {
    case session_phase::catch_up_again:
      phase_ = session_phase::catching_up;
      return true;
    case session_phase::catching_up:
      phase_ = session_phase::live;
      return false;
    default:
      return false;
  }
}

bool session_machine::close() {
  if (phase_ == session_phase::closing) return false;
  phase_ = session_phase::closing;
  return true;
}

}  // namespace pushonce::gateway
