#pragma once
// HS256 JSON Web Tokens (docs/protocol.md auth), through Debian's libjwt: `sub` is the user,
// `exp` is required. Only HS256 is accepted: `none` and every other algorithm are refused
// whatever the token's header says.

#include <chrono>
#include <string>
#include <string_view>

#include "core/outcome.hpp"

namespace pushonce::jwt {

/// A signed token for `user` valid for `ttl`.
std::string mint(std::string_view user, std::chrono::seconds ttl, std::string_view secret);

/// The token's user, or a failure: code "unauthorized" and why (bad signature, wrong
/// algorithm, expired, no sub, malformed).
outcome<std::string> verify(std::string_view token, std::string_view secret);

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
