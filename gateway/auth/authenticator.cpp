#include "gateway/auth/authenticator.hpp"

#include "core/jwt.hpp"
#include "core/names.hpp"
#include "gateway/auth/key_set.hpp"

namespace pushonce::gateway {

namespace {

identity identity_of(const jwt::identity& t) {
  return identity{t.user, t.exp, t.iat};
}

// An HS256 token against the secret; any other against the key set (--jwt-jwks), which
// checks that the algorithm is its key's.
outcome<identity> verify_token(const std::string& token, const std::string& secret,
                               const std::string& previous, const jwt::verify_options& opts,
                               const std::shared_ptr<key_source>& keys) {
  if (keys && token_alg(token) != "HS256") {
    auto r = keys->get()->verify(token, opts);
    if (!r) return failure{errc::auth_failed, r.error().message};
    return identity_of(r.value());
  }
  if (secret.empty())
    return failure{errc::auth_failed, "no JWT secret is configured on this gateway"};
  auto r = jwt::verify(token, secret, opts);
  // A secret rotation: tokens signed with the previous secret verify until it is removed.
  if (!r && !previous.empty())
    if (auto old = jwt::verify(token, previous, opts)) return identity_of(old.value());
  if (!r) return failure{errc::auth_failed, r.error().message};
  return identity_of(r.value());
}

// JWT (the hello's token must verify), or with --dev-auth: a token still verifies when a
// secret or key set is configured, and a hello without one names its user.
class token_authenticator final : public authenticator {
 public:
  token_authenticator(bool dev, std::string secret, jwt::verify_options opts,
                      std::shared_ptr<key_source> keys, std::string previous)
      : dev_(dev),
        secret_(std::move(secret)),
        previous_(std::move(previous)),
        opts_(std::move(opts)),
        keys_(std::move(keys)) {}
  outcome<identity> authenticate(const hello_op& hello) const override {
    if (!dev_) {
      if (!hello.token) return failure{errc::auth_failed, "hello needs \"token\" (a JWT)"};
      return verify_token(*hello.token, secret_, previous_, opts_, keys_);
    }
    if (hello.token && (!secret_.empty() || keys_))
      return verify_token(*hello.token, secret_, previous_, opts_, keys_);
    if (hello.token && !hello.user)  // e.g. a refresh: there is no user to trust instead
      return failure{errc::auth_failed, "no JWT secret is configured on this gateway"};
    if (!hello.user) return failure{errc::auth_failed, "hello needs \"user\" (dev auth)"};
    if (!valid_name(*hello.user))
      return failure{errc::auth_failed,
                     "invalid user: use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
    return identity{*hello.user, std::nullopt, std::nullopt};
  }

 private:
  bool dev_;
  std::string secret_, previous_;
  jwt::verify_options opts_;
  std::shared_ptr<key_source> keys_;
};

}  // namespace

std::unique_ptr<authenticator> make_jwt_authenticator(std::string secret,
                                                      jwt::verify_options opts) {
  return make_jwt_authenticator(std::move(secret), std::move(opts), nullptr);
}

std::unique_ptr<authenticator> make_dev_authenticator(std::string secret,
                                                      jwt::verify_options opts) {
  return make_dev_authenticator(std::move(secret), std::move(opts), nullptr);
}

std::unique_ptr<authenticator> make_jwt_authenticator(std::string secret, jwt::verify_options opts,
                                                      std::shared_ptr<key_source> keys,
                                                      std::string previous_secret) {
  return std::make_unique<token_authenticator>(false, std::move(secret), std::move(opts),
                                               std::move(keys), std::move(previous_secret));
}

std::unique_ptr<authenticator> make_dev_authenticator(std::string secret, jwt::verify_options opts,
                                                      std::shared_ptr<key_source> keys,
                                                      std::string previous_secret) {
  return std::make_unique<token_authenticator>(true, std::move(secret), std::move(opts),
                                               std::move(keys), std::move(previous_secret));
}

}  // namespace pushonce::gateway
