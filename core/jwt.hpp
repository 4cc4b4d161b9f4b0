#pragma once
// HS256 JSON Web Tokens (docs/protocol.md auth), through Debian's libjwt: `sub` is the user,
// `exp` is required. Only HS256 is accepted: `none` and every other algorithm are refused
// whatever the token's header says. The time claims (exp, nbf, iat) are checked with a
// leeway for clocks that differ, a token may be required to name an audience and an issuer,
// and a token that lives longer than a maximum is refused.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/outcome.hpp"

namespace pushonce::jwt {

/// The longest `ttl` mint() accepts (ten years): more is a mistake, and past the clock's range.
inline constexpr std::chrono::seconds max_ttl{10LL * 365 * 24 * 3600};

/// A signed token for `user` valid for `ttl` (1 s to max_ttl; throws std::invalid_argument
/// otherwise, except that a negative ttl mints an expired token for tests).
std::string mint(std::string_view user, std::chrono::seconds ttl, std::string_view secret);

/// What verify() requires beyond the signature and `sub`.
struct verify_options {
  /// Clock skew allowed: exp may be this far past, nbf and iat this far ahead.
  std::chrono::seconds leeway{0};
  /// The `aud` claim (a string or an array of strings) must hold this one.
  std::optional<std::string> audience;
  /// The `iss` claim must be this.
  std::optional<std::string> issuer;
  /// exp - iat (exp - now without iat) at most this (plus the leeway); 0: no maximum.
  std::chrono::seconds max_lifetime{0};
  /// The time to judge by, in seconds since the epoch; none: now.
  std::optional<long long> now;
};

/// Who a verified token speaks for, and when it was issued and ends (seconds since the
/// epoch): a session follows its token's `exp` (refresh, expiry) and a revocation compares
/// with `iat`.
struct identity {
  std::string user;
  long long exp = 0;
  std::optional<long long> iat;  // absent when the token has no iat
};

/// The token's identity, or a failure: code "unauthorized" and why (bad signature, wrong
/// algorithm, expired, not yet valid, wrong audience or issuer, too long a lifetime, no sub,
/// malformed).
outcome<identity> verify(std::string_view token, std::string_view secret,
                         const verify_options& opts = {});

/// The secret from PUSHONCE_JWT_SECRET, or the contents of the file named by
/// PUSHONCE_JWT_SECRET_FILE (trailing newline removed); empty when neither is set or the
/// setting is bad (see pushonce::secret_from_env in core/config.hpp).
std::string secret_from_env();

/// HS256 secrets shorter than this are refused at start (RFC 7518 §3.2: a key of at least
/// the hash's size, 256 bits).
inline constexpr std::size_t min_secret_bytes = 32;

/// Why `secret` cannot be used (too short), or "" when it can. An empty secret is "no
/// secret" and is not judged here.
std::string secret_problem(std::string_view secret);

}  // namespace pushonce::jwt
