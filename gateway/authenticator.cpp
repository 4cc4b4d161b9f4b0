#include "gateway/authenticator.hpp"

#include "core/names.hpp"

namespace pushonce::gateway {

namespace {

class dev_authenticator final : public authenticator {
 public:
  outcome<std::string> authenticate(const hello_op& hello) const override {
    if (!hello.user) return failure{"auth_failed", "hello needs \"user\" (dev auth)"};
    if (!valid_name(*hello.user))
      return failure{"auth_failed", "invalid user: use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
    return *hello.user;
  }
};

class jwt_unavailable final : public authenticator {
 public:
  outcome<std::string> authenticate(const hello_op&) const override {
    return failure{"auth_failed", "jwt auth not available yet"};
  }
};

}  // namespace

std::unique_ptr<authenticator> make_dev_authenticator() {
  return std::make_unique<dev_authenticator>();
}

std::unique_ptr<authenticator> make_jwt_unavailable_authenticator() {
  return std::make_unique<jwt_unavailable>();
}

}  // namespace pushonce::gateway
