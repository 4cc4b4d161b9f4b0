#include "gateway/authenticator.hpp"

#include "core/jwt.hpp"
#include "core/names.hpp"

namespace pushonce::gateway {

namespace {

outcome<std::string> verify_token(const std::string& token, const std::string& secret,
                                  const jwt::verify_options& opts) {
  if (secret.empty()) return failure{"auth_failed", "no JWT secret is configured on this gateway"};
  auto r = jwt::verify(token, secret, opts);
  if (!r) return failure{"auth_failed", r.error().message};
  return r.value();
}

class jwt_authenticator final : public authenticator {
 public:
  jwt_authenticator(std::string secret, jwt::verify_options opts)
      : secret_(std::move(secret)), opts_(std::move(opts)) {}
  outcome<std::string> authenticate(const hello_op& hello) const override {
    if (!hello.token) return failure{"auth_failed", "hello needs \"token\" (a JWT)"};
    return verify_token(*hello.token, secret_, opts_);
  }

 private:
  std::string secret_;
  jwt::verify_options opts_;
};

class dev_authenticator final : public authenticator {
 public:
  dev_authenticator(std::string secret, jwt::verify_options opts)
      : secret_(std::move(secret)), opts_(std::move(opts)) {}
  outcome<std::string> authenticate(const hello_op& hello) const override {
    if (hello.token && !secret_.empty()) return verify_token(*hello.token, secret_, opts_);
    if (!hello.user) return failure{"auth_failed", "hello needs \"user\" (dev auth)"};
    if (!valid_name(*hello.user))
      return failure{"auth_failed", "invalid user: use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
    return *hello.user;
  }

 private:
  std::string secret_;
  jwt::verify_options opts_;
};

}  // namespace

std::unique_ptr<authenticator> make_jwt_authenticator(std::string secret,
                                                      jwt::verify_options opts) {
  return std::make_unique<jwt_authenticator>(std::move(secret), std::move(opts));
}

std::unique_ptr<authenticator> make_dev_authenticator(std::string secret,
                                                      jwt::verify_options opts) {
  return std::make_unique<dev_authenticator>(std::move(secret), std::move(opts));
}

}  // namespace pushonce::gateway
