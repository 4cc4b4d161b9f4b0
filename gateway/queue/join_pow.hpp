#pragma once
// Proof of work at join, the I/O side (core/pow_challenge decides): each queue's
// join_pow_bits from NS:{q:Q}:settings, read at most once a second per queue and shared by
// the gateway's sessions; the gateways' shared secret (PUSHONCE_POW_SECRET, else one random
// secret created once in Redis, NS:pow:secret, with SET NX, and read by every gateway);
// refusals counted in NS:{q:Q}:stats refused_pow.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/pow_challenge.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::gateway {

class join_pow {
 public:
  join_pow(std::shared_ptr<redis::connection> conn, keys k, std::optional<std::string> secret,
           std::chrono::milliseconds ttl = std::chrono::milliseconds(300'000));

  /// The queue's join_pow_bits (0: off; 1..32), at most a second old; 0 when it could not
  /// be read and nothing is known yet.
  boost::asio::awaitable<int> bits(std::string queue);
  /// The gate, once the secret is known (read from Redis on first use); nullptr when Redis
  /// could not be asked.
  boost::asio::awaitable<std::shared_ptr<const pow_gate>> gate();
  /// A fresh challenge (gate must be non-null).
  static pow_challenge issue(const pow_gate& g, const std::string& user, const std::string& queue,
                             int bits);
  /// One more refusal in NS:{q:Q}:stats refused_pow (not awaited).
  void count_refusal(const std::string& queue);

  /// join_pow_bits as a setting: 0 for absent, junk or out of range (0..32).
  static int bits_of(const redis::reply& field);

 private:
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  std::chrono::milliseconds ttl_;
  std::mutex mutex_;
  std::shared_ptr<const pow_gate> gate_;
  struct cached {
    int bits = 0;
    std::chrono::steady_clock::time_point at;
  };
  // At most max_cached queues: a join naming a queue no leader runs (a well-formed name
  // costs one HGET a second) cannot grow it without bound.
  static constexpr std::size_t max_cached = 1024;
  std::map<std::string, cached> bits_;
};

}  // namespace pushonce::gateway
