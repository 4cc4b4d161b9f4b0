#pragma once
// Proof of work at join (docs/protocol.md, docs/security.md), with no sockets and no Redis:
// a gateway issues a challenge bound to a user, a queue, a difficulty and an expiry; any
// gateway that shares the secret verifies a solution from the challenge id alone (an
// HMAC-SHA256 over those, OpenSSL); the single use is join.lua's (one SET NX).
//
//   id     = "<expires_at ms>.<bits>.<random hex>.<mac hex>"
//   mac    = first 16 bytes of HMAC-SHA256(secret, length-prefixed "pow1", user, queue,
//            expires_at, bits, random)
//   prefix = id + "."
//   solved: SHA-256(prefix + nonce) has at least `bits` leading zero bits
//
// Invariants: a challenge verifies only for the user and queue it was issued for, before
// its expiry, with a nonce of 1-64 characters that solves it at its own bits, which must be
// at least the queue's current setting; the id is at most max_id_size characters and is
// parsed without allocation beyond its own copy (fuzz-safe: any bytes give a verdict).

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pushonce {

struct pow_challenge {
  std::string id;
  std::string prefix;
  int bits = 0;
  long long expires_at = 0;  // ms since the epoch
};

/// What a join carries: "pow":{"id","nonce"}.
struct pow_solution {
  std::string id;
  std::string nonce;
};

enum class pow_verdict {
  ok,
  missing,    // no solution given
  malformed,  // not an id this gateway issues, or a nonce outside 1-64 characters
  forged,     // the MAC does not hold (another user, queue, secret, or edited)
  expired,
  too_easy,  // issued for fewer bits than the queue now asks
  unsolved,  // the nonce does not give enough leading zero bits
};
/// A short reason for people ("expired", ...).
std::string_view pow_reason(pow_verdict v);

struct pow_check {
  pow_verdict verdict = pow_verdict::missing;
  std::string token;     // the challenge's random part: the single-use key (when ok)
  long long ttl_ms = 0;  // how long the single-use key must live (when ok)
  bool ok() const { return verdict == pow_verdict::ok; }
};

/// Leading zero bits of a digest (0..8*size).
int leading_zero_bits(const unsigned char* digest, std::size_t size);
/// SHA-256(prefix + nonce) has at least `bits` leading zero bits.
bool pow_solves(std::string_view prefix, std::string_view nonce, int bits);

class pow_gate {
 public:
  static constexpr std::size_t max_id_size = 128;
  static constexpr std::size_t max_nonce_size = 64;
  static constexpr int max_bits = 32;

  /// `secret`: shared by every gateway (docs/security.md); `ttl`: a challenge's lifetime.
  explicit pow_gate(std::string secret,
                    std::chrono::milliseconds ttl = std::chrono::milliseconds(300'000));

  /// A challenge for `user` joining `queue` at `bits` (1..32); `random`: fresh hex from a
  /// cryptographic RNG (16-64 characters).
  pow_challenge issue(std::string_view user, std::string_view queue, int bits, long long now_ms,
                      std::string_view random) const;
  /// Whether `s` is a valid solution for `user` joining `queue`, which asks `min_bits`.
  pow_check verify(std::string_view user, std::string_view queue, int min_bits,
                   const std::optional<pow_solution>& s, long long now_ms) const;

  std::chrono::milliseconds ttl() const { return ttl_; }

 private:
  std::string mac_hex(std::string_view user, std::string_view queue, std::string_view expires_at,
                      std::string_view bits, std::string_view random) const;
  std::string secret_;
  std::chrono::milliseconds ttl_;
};

/// 2 * bytes hex characters from OpenSSL's RAND_bytes (a challenge's random part, a secret).
std::string random_hex_secure(std::size_t bytes);

}  // namespace pushonce
