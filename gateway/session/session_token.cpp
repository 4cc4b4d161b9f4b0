// session_flow's token: the expiry timer that closes a session whose token ran out
// (token_expiry decides the deadline), and the refresh op that moves it.
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

#include "core/log.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/session/op_handlers.hpp"
#include "gateway/session/session_flow.hpp"
#include "gateway/session/session_transport.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

namespace {

long long session_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void session_flow::arm_expiry() {
  auto wait = expiry_.wait(session_now_ms());
  if (!wait) {
    if (expiry_timer_) expiry_timer_->cancel();
    return;
  }
  if (!expiry_timer_) expiry_timer_ = std::make_unique<asio::steady_timer>(io_.executor());
  expiry_timer_->expires_after(*wait);  // cancels a wait armed before
  std::weak_ptr<session_handle> weak = io_.self();
  expiry_timer_->async_wait([weak = std::move(weak), this](std::error_code ec) {
    auto alive = weak.lock();
    if (ec || !alive) return;
    on_expiry_timer();
  });
}

void session_flow::on_expiry_timer() {
  if (machine_.closing()) return;
  if (!expiry_.expired(session_now_ms())) {
    arm_expiry();  // a refresh moved the deadline, or the clocks drifted apart
    return;
  }
  ++sv_.metrics.token_expiry_closes;
  log::info(log::fields{{"user", user_}, {"session", session_id_}},
            "{}: {}: token expired without a refresh: closed 1008", log_name_, user_);
  io_.close(close_policy, "token expired");
}

void session_flow::on_refresh(std::string token, session_transport& out) {
  hello_op h;
  h.token = std::move(token);
  auto who = sv_.auth->authenticate(h);
  // A revoked token cannot extend a session either (as at hello).
  if (who && sv_.revoked(who.value())) who = failure{errc::auth_failed, "token revoked"};
  auto r = reply_refresh(who, user_, expiry_);
  if (r.accepted) {
    ++sv_.metrics.token_refreshes;
    iat_ = who.value().iat;
    arm_expiry();
  } else {
    ++sv_.metrics.token_refresh_refusals;
  }
  out.send_text(std::move(r.frame));
}

}  // namespace pushonce::gateway
