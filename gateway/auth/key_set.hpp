#pragma once
// Public keys of an identity provider that signs the tokens (docs/protocol.md
// "--jwt-jwks"): a JSON Web Key Set (RFC 7517) read from a file, with RSA keys (RS256) and
// EC P-256 keys (ES256), read again on SIGHUP (key rotation). A token names its key by `kid`
// (a set of one key needs none); its header's `alg` must be its key's, so a token can never
// choose how its key is used (an HS256 token is never checked against a public key). The
// claims are checked as an HS256 token's are (core/jwt_claims.hpp).

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/jwt.hpp"
#include "core/outcome.hpp"
#include "gateway/auth/authenticator.hpp"

namespace pushonce::gateway {

class key_set {
 public:
  /// A JWKS document; throws std::invalid_argument saying which key is wrong. Keys of other
  /// types or uses ("use":"enc") are skipped; a set with no usable key is an error.
  static std::shared_ptr<const key_set> parse(std::string_view json);
  /// parse() of a file's contents; throws std::invalid_argument when it cannot be read.
  static std::shared_ptr<const key_set> load(const std::string& path);

  /// The token's user, or a failure "unauthorized" saying why.
  outcome<jwt::identity> verify(std::string_view token, const jwt::verify_options& opts) const;
  std::size_t size() const { return keys_.size(); }

  struct key {
    std::string kid;
    std::string alg;  // "RS256" or "ES256"
    std::string pem;  // the public key, for libjwt
  };

 private:
  std::vector<key> keys_;
};

/// The key set in force: replaced whole on SIGHUP while hellos are verified. Thread-safe.
class key_source {
 public:
  explicit key_source(std::shared_ptr<const key_set> keys) : keys_(std::move(keys)) {}
  std::shared_ptr<const key_set> get() const {
    std::lock_guard lock(mutex_);
    return keys_;
  }
  void set(std::shared_ptr<const key_set> keys) {
    std::lock_guard lock(mutex_);
    keys_ = std::move(keys);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const key_set> keys_;
};

/// The `alg` of a token's header ("" when the header cannot be read).
std::string token_alg(std::string_view token);

/// As make_jwt_authenticator / make_dev_authenticator, with a key set for tokens whose
/// (`previous_secret`, during a rotation: an HS256 token that does not verify with
/// `secret` may verify with it; PUSHONCE_JWT_SECRET_PREVIOUS)
/// header names another algorithm than HS256 (`keys` may be null: none).
std::unique_ptr<authenticator> make_jwt_authenticator(std::string secret, jwt::verify_options opts,
                                                      std::shared_ptr<key_source> keys,
                                                      std::string previous_secret = {});
std::unique_ptr<authenticator> make_dev_authenticator(std::string secret, jwt::verify_options opts,
                                                      std::shared_ptr<key_source> keys,
                                                      std::string previous_secret = {});

}  // namespace pushonce::gateway
