#include "gateway/session/token_expiry.hpp"

#include <algorithm>

namespace pushonce::gateway {

token_expiry::token_expiry(std::optional<long long> exp_s, std::chrono::seconds leeway)
    : exp_s_(exp_s), leeway_(std::max(leeway, std::chrono::seconds(0))) {}

std::optional<long long> token_expiry::exp_ms() const {
  if (!exp_s_) return std::nullopt;
  return *exp_s_ * 1000;
}

std::optional<long long> token_expiry::deadline_ms() const {
  if (!exp_s_) return std::nullopt;
  return (*exp_s_ + leeway_.count()) * 1000;
}

std::optional<std::chrono::milliseconds> token_expiry::wait(long long now_ms) const {
  auto d = deadline_ms();
  if (!d) return std::nullopt;
  return std::chrono::milliseconds(std::max(0LL, *d - now_ms));
}

bool token_expiry::expired(long long now_ms) const {
  auto d = deadline_ms();
  return d && now_ms >= *d;
}

token_expiry::refresh_verdict token_expiry::refresh(std::string_view session_user,
                                                    std::string_view token_user,
                                                    std::optional<long long> exp_s) {
  if (token_user != session_user) return refresh_verdict::other_user;
  exp_s_ = exp_s;
  return refresh_verdict::accepted;
}

}  // namespace pushonce::gateway
