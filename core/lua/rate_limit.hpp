#pragma once
// The call of lua/rate_limit.lua (KEYS and ARGV written once, here): a token bucket in
// Redis shared by every gateway, one EVALSHA per call.

#include <array>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

/// lua/rate_limit.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct rate_limit_inputs {
  static constexpr std::string_view script = "rate_limit";
  std::string bucket{};                             // KEYS
  std::string rate_arg{}, burst_arg{}, cost_arg{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<rate_limit_inputs>, 1>{{{"bucket", &rate_limit_inputs::bucket}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<rate_limit_inputs>, 3>{{{"rate", &rate_limit_inputs::rate_arg},
                                                           {"burst", &rate_limit_inputs::burst_arg},
                                                           {"cost", &rate_limit_inputs::cost_arg}}};
  }
};

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
