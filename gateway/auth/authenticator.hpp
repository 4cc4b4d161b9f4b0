#pragma once
// Who a WebSocket session belongs to, decided from its hello frame: an HS256 JWT signed
// with PUSHONCE_JWT_SECRET (`sub` is the user), or, with --dev-auth, the "user" field.
// A refusal closes the connection with 1008 and the failure's message as the reason.

#include <memory>
#include <string>

#include "core/jwt.hpp"
#include "core/outcome.hpp"
#include "gateway/protocol/protocol.hpp"

namespace pushonce::gateway {

/// Who a session is: the user, and its token's `exp` and `iat` (seconds since the epoch);
/// no `exp` for a --dev-auth session without a token (it does not expire).
struct identity {
  std::string user;
  std::optional<long long> exp;
  std::optional<long long> iat;
};

class authenticator {
 public:
  virtual ~authenticator() = default;
  /// The identity (its user already a valid name), or a failure (code "auth_failed").
  virtual outcome<identity> authenticate(const hello_op& hello) const = 0;
};

/// JWT: the hello's "token" must verify with `secret` (empty: every hello is refused) and
/// meet `opts` (--jwt-leeway, --jwt-audience, --jwt-issuer, --jwt-max-lifetime).
std::unique_ptr<authenticator> make_jwt_authenticator(std::string secret,
                                                      jwt::verify_options opts = {});
/// --dev-auth: a hello with a token is still verified (when a secret is set); without
/// one, the hello's "user" is trusted (must be a valid name).
std::unique_ptr<authenticator> make_dev_authenticator(std::string secret = {},
                                                      jwt::verify_options opts = {});

}  // namespace pushonce::gateway
