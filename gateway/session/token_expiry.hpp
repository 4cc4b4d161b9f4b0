#pragma once
// When a session's token runs out, and what a `refresh` op does to it (docs/protocol.md
// "Token refresh and expiry"). Plain logic on numbers, no timer and no socket: session_flow
// arms one timer from it and carries its verdicts out.
//
// - A session follows the last token it presented (hello, then each accepted refresh). It
//   ends at exp + the gateway's --jwt-leeway (the same leeway the verification allows):
//   the timer fires at that moment and the session closes with 1008 "token expired".
// - A session without a token (--dev-auth, hello with a user) has no deadline, until it
//   presents one in a refresh.
// - A refresh is accepted when its token verifies (the authenticator's job, before this)
//   and names the session's user. Its exp replaces the old one, later or earlier: the
//   newest token is what the issuer says now (a shorter one may follow a downgrade), so
//   the session never outlives it. A token for another user is refused and the session
//   stays on its old token.
// - Timer re-arming: the timer is armed for deadline_ms(); when it fires, expired(now)
//   decides: past the deadline → close; not yet (a refresh moved it, or the steady and
//   system clocks drifted) → re-arm for wait(now). An accepted refresh re-arms at once.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace pushonce::gateway {

class token_expiry {
 public:
  /// The verdict on a refresh.
  enum class refresh_verdict : unsigned char {
    accepted,    // the session now follows the new token's exp
    other_user,  // the token names another user: refused (bad_request)
  };

  /// A session without a token: it never expires.
  token_expiry() = default;
  /// A session whose token ends at `exp_s` (seconds since the epoch), given the leeway.
  token_expiry(std::optional<long long> exp_s, std::chrono::seconds leeway);

  /// The session has a deadline.
  bool expires() const { return exp_s_.has_value(); }
  /// The token's exp in ms since the epoch (what `refreshed` answers), or none.
  std::optional<long long> exp_ms() const;
  /// When the session ends, ms since the epoch: (exp + leeway) * 1000; none when never.
  std::optional<long long> deadline_ms() const;
  /// How long from `now_ms` until the deadline (0 when it has passed); none when never.
  std::optional<std::chrono::milliseconds> wait(long long now_ms) const;
  /// True when the session must close at `now_ms` (the deadline is reached).
  bool expired(long long now_ms) const;

  /// A verified refresh token of `token_user` ending at `exp_s`, for a session of
  /// `session_user`. Accepted: the deadline follows the new exp (re-arm the timer).
  refresh_verdict refresh(std::string_view session_user, std::string_view token_user,
                          std::optional<long long> exp_s);

 private:
  std::optional<long long> exp_s_;
  std::chrono::seconds leeway_{0};
};

}  // namespace pushonce::gateway
