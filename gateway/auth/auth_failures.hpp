#pragma once
// Failed attempts at the gateway's shared secrets (the API key of /api/publish, the admin
// token of /api/status and /metrics), per client address (docs/security.md): each failure
// takes a token from the address's bucket (`burst` failures, refilled at `per_minute` a
// minute); an address with no token left is answered 429 without its secret being compared,
// until a token is back. Log lines about failures are limited to one a second (the ones
// dropped meanwhile are counted into the next). No sockets; thread-safe. At most
// `max_tracked` addresses are remembered: over it, addresses whose buckets are full again
// are forgotten, then (a flood of addresses) all.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "gateway/limits/token_bucket.hpp"

namespace pushonce::gateway {

class auth_failures {
 public:
  using clock = token_bucket::clock;

  explicit auth_failures(double burst = 10, double per_minute = 10,
                         std::size_t max_tracked = 100000);

  /// How long `client` must wait before trying again, or std::nullopt when it may try now.
  std::optional<std::chrono::seconds> blocked(const std::string& client,
                                              clock::time_point now = clock::now());
  /// Counts one failure of `client`.
  void failed(const std::string& client, clock::time_point now = clock::now());
  /// Whether a log line may be written now; when it may, `dropped` is how many were not
  /// written since the last one.
  bool may_log(std::uint64_t& dropped, clock::time_point now = clock::now());
  std::size_t tracked() const;

 private:
  double burst_;
  double rate_per_s_;
  std::size_t max_tracked_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, token_bucket> buckets_;
  std::optional<clock::time_point> last_log_;
  std::uint64_t dropped_ = 0;
};

}  // namespace pushonce::gateway
