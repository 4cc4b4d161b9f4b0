#pragma once
// The call of lua/rate_limit.lua (KEYS and ARGV written once, here): a token bucket in
// Redis shared by every gateway, one EVALSHA per call.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

struct rate_decision {
  bool allowed = true;
  std::chrono::milliseconds retry_after{0};  // when refused: until the cost is there
};

/// The bucket's key for a secret (an API key): NS:ratelimit:<what>:<FNV-1a of the secret,
/// hex>, so the secret itself never becomes a key name.
std::string rate_limit_key(const keys& k, std::string_view what, std::string_view secret);

/// Takes `cost` tokens of the bucket at `key` (rate per second, burst: positive).
boost::asio::awaitable<outcome<rate_decision>> take_tokens(redis::connection& conn, std::string key,
                                                           long long rate, long long burst,
                                                           long long cost = 1);

}  // namespace pushonce::lua
