#include "gateway/authenticator.hpp"

#include "core/jwt.hpp"
#include "core/names.hpp"

namespace pushonce::gateway {

namespace {

outcome<std::string> verify_token(const std::string& token, const std::string& secret) {
  if (secret.empty()) return failure{"auth_failed", "no JWT secret is configured on this gateway"};
  auto r = jwt::verify(token, secret);
  if (!r) return failure{"auth_failed", r.error().message};
  return r.value();
}

class jwt_authenticator final : public authenticator {
 public:
  explicit jwt_authenticator(std::string secret) : secret_(std::move(secret)) {}
  outcome<std::string> authenticate(const hello_op& hello) const override {
    if (!hello.token) return failure{"auth_failed", "hello needs \"token\" (a JWT)"};
    return verify_token(*hello.token, secret_);
  }

 private:
  std::string secret_;
};

class dev_authenticator final : public authenticator {
 public:
  explicit dev_authenticator(std::string secret) : secret_(std::move(secret)) {}
  outcome<std::string> authenticate(const hello_op& hello) const override {
    if (hello.token && !secret_.empty()) return verify_token(*hello.token, secret_);
    if (!hello.user) return failure{"auth_failed", "hello needs \"user\" (dev auth)"};
    if (!valid_name(*hello.user))
      return failure{"auth_failed", "invalid user: use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
    return *hello.user;
  }

 private:
  std::string secret_;
};

}  // namespace

std::unique_ptr<authenticator> make_jwt_authenticator(std::string secret) {
  return std::make_unique<jwt_authenticator>(std::move(secret));
}

std::unique_ptr<authenticator> make_dev_authenticator(std::string secret) {
  return std::make_unique<dev_authenticator>(std::move(secret));
}

}  // namespace pushonce::gateway
