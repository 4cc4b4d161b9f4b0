#pragma once
// Who a WebSocket session belongs to, decided from its hello frame. The seam where HS256
// JWT verification (PUSHONCE_JWT_SECRET) plugs in; --dev-auth trusts the "user" field.
// A refusal closes the connection with 1008 and the failure's message as the reason.

#include <memory>
#include <string>

#include "core/outcome.hpp"
#include "gateway/protocol.hpp"

namespace pushonce::gateway {

class authenticator {
 public:
  virtual ~authenticator() = default;
  /// The user name (already a valid name), or a failure (code "auth_failed").
  virtual outcome<std::string> authenticate(const hello_op& hello) const = 0;
};

/// --dev-auth: the hello's "user" is trusted (must be a valid name).
std::unique_ptr<authenticator> make_dev_authenticator();
/// Without --dev-auth until JWT verification exists: every hello is refused with
/// "jwt auth not available yet".
std::unique_ptr<authenticator> make_jwt_unavailable_authenticator();

}  // namespace pushonce::gateway
