#pragma once
// The hello of one session as a socket-free machine (Boost.Redis exec_fsm shape): the shell
// (session_flow::on_hello) calls resume(event) with what it got and carries out the action
// returned, until close or done. No sockets, no Redis, no coroutines here.
//
//   verify_token ─▶ check_revoked ─▶ take_slot ─▶ open_session ─▶ route ─▶ check_revoked
//   ─▶ read_first_page ─▶ skip_lost ─▶ [issue_challenge] ─▶ send_welcome ─▶ done
//
// Events are what the shell got (hello_event::kind); actions are the step to carry out next
// (hello_action::what), or close with code and reason, or done (the hello is over: replay
// follows in session_flow, or the session was closed meanwhile).
//
// Seven ways to close (close_why): auth failed, revoked, too many sessions (1008);
// session.lua failed (1013); revoked heard during the route (1008); the subscribe failed,
// the first inbox read failed (1013). A session closed meanwhile (closing) ends in done
// without a close of its own.

#include <cstdint>
#include <optional>
#include <string>

#include "gateway/protocol/protocol.hpp"
#include "gateway/session/hello_resume.hpp"

namespace pushonce::gateway {

enum class hello_step : std::uint8_t {
  verify_token,
  check_revoked,
  take_slot,
  open_session,
  route,
  check_revoked_again,
  read_first_page,
  skip_lost,        // resume_state::skip_to(welcome().skip_to): the welcome owns what is gone
  issue_challenge,  // proof of work on: the welcome's challenge for the default queue
  send_welcome,
  close,
  done,
};

enum class close_why : std::uint8_t {
  none,
  auth_failed,
  revoked,
  too_many_sessions,
  session_lua_failed,
  revoked_after_route,
  subscribe_failed,
  inbox_read_failed,
};

/// What the shell got from the last action.
struct hello_event {
  enum class kind : std::uint8_t {
    start,        // the hello frame was parsed
    ok,           // the action succeeded (token valid, slot taken, route done...)
    failed,       // the action failed (token invalid, slot refused, Redis error...); message
    revoked,      // check_revoked*: the identity is revoked
    not_revoked,  // check_revoked*: it is not
    opened,       // open_session: session.lua answered (epoch, latest, acked, rotated)
    page,         // read_first_page: the first entry's offset (nullopt: empty)
    closing,      // the session closed while the shell awaited
  };
  kind what = kind::start;
  std::string message;  // failed
  std::string epoch;    // opened
  long long latest = 0, acked = 0;
  bool rotated = false;
  std::optional<long long> first;  // page
};

struct hello_action {
  hello_step what = hello_step::done;
  std::uint16_t code = 0;  // close
  std::string reason;      // close
  close_why why = close_why::none;
  std::string detail;  // close: the failure message (for the shell's log)
};

class hello_machine {
 public:
  static constexpr std::uint16_t close_policy = 1008;
  static constexpr std::uint16_t close_try_again = 1013;

  /// since: the hello's since; pow: the gateway asks proof of work (issue_challenge runs).
  explicit hello_machine(std::optional<since_position> since, bool pow = false)
      : resume_(std::move(since)), pow_(pow) {}

  hello_action resume(const hello_event& ev);

  hello_step step() const { return step_; }
  const hello_resume& decide() const { return resume_; }
  /// After open_session: where replay starts. After read_first_page: the welcome's plan.
  long long start() const { return resume_.start(); }
  const welcome_plan& welcome() const { return welcome_; }
  /// The welcome was sent (done after send_welcome): replay follows. false at a done
  /// reached because the session closed meanwhile.
  bool welcomed() const { return welcomed_; }

 private:
  hello_action close(std::uint16_t code, std::string reason, close_why why,
                     std::string detail = {});
  hello_action go(hello_step s) {
    step_ = s;
    return now();
  }
  hello_action now() const {
    hello_action a;
    a.what = step_;
    return a;
  }

  hello_resume resume_;
  welcome_plan welcome_;
  hello_step step_ = hello_step::verify_token;
  bool pow_ = false;
  bool started_ = false;
  bool welcomed_ = false;
  bool route_failed_ = false;
  std::string route_error_;
};

}  // namespace pushonce::gateway
