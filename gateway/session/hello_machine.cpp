#include "gateway/session/hello_machine.hpp"

#include <utility>

namespace pushonce::gateway {

hello_action hello_machine::close(std::uint16_t code, std::string reason, close_why why,
                                  std::string detail) {
  step_ = hello_step::close;
  hello_action a = now();
  a.code = code;
  a.reason = std::move(reason);
  a.why = why;
  a.detail = std::move(detail);
  return a;
}

hello_action hello_machine::resume(const hello_event& ev) {
  using k = hello_event::kind;
  if (step_ == hello_step::close || step_ == hello_step::done) return now();
  if (!started_) {
    started_ = true;
    return go(hello_step::verify_token);
  }
  // The shell reports closing after its awaits (open, route, page, challenge).
  if (ev.what == k::closing) return go(hello_step::done);
  switch (step_) {
    case hello_step::verify_token:
      if (ev.what != k::ok) return close(close_policy, ev.message, close_why::auth_failed);
      return go(hello_step::check_revoked);
    case hello_step::check_revoked:
      if (ev.what == k::revoked) return close(close_policy, "revoked", close_why::revoked);
      return go(hello_step::take_slot);
    case hello_step::take_slot:
      if (ev.what != k::ok)
        return close(close_policy, "too many sessions for this user", close_why::too_many_sessions);
      return go(hello_step::open_session);
    case hello_step::open_session:
      if (ev.what != k::opened)
        return close(close_try_again, "redis unavailable", close_why::session_lua_failed,
                     ev.message);
      resume_.on_opened(ev.epoch, ev.latest, ev.acked, ev.rotated);
      return go(hello_step::route);
    case hello_step::route:
      // the route's result is looked at after the second revocation check
      route_failed_ = ev.what != k::ok;
      route_error_ = ev.message;
      return go(hello_step::check_revoked_again);
    case hello_step::check_revoked_again:
      if (ev.what == k::revoked)
        return close(close_policy, "revoked", close_why::revoked_after_route);
      if (route_failed_)
        return close(close_try_again, "redis unavailable", close_why::subscribe_failed,
                     route_error_);
      return go(hello_step::read_first_page);
    case hello_step::read_first_page:
      if (ev.what != k::page)
        return close(close_try_again, "redis unavailable", close_why::inbox_read_failed,
                     ev.message);
      welcome_ = resume_.on_first_page(ev.first);
      return go(hello_step::skip_lost);
    case hello_step::skip_lost:
      return go(pow_ ? hello_step::issue_challenge : hello_step::send_welcome);
    case hello_step::issue_challenge:
      return go(hello_step::send_welcome);
    case hello_step::send_welcome:
      welcomed_ = true;
      return go(hello_step::done);
    case hello_step::close:
    case hello_step::done:
      break;
  }
  return now();
}

}  // namespace pushonce::gateway
