#pragma once
// The claims of a token whose signature and algorithm were already checked (an HS256 token
// by core/jwt, a token signed by a key of a JSON Web Key Set by gateway/auth/key_set): exp, nbf,
// iat, aud, iss and the lifetime against verify_options, then `sub`, the user.

#include <string>
#include <string_view>

#include "core/jwt.hpp"
#include "core/outcome.hpp"

namespace pushonce::jwt {

/// `claims_json` is the token's payload (a JSON object's text). Its identity (`sub`, `exp`,
/// `iat`), or a failure "unauthorized" saying why.
outcome<identity> identity_of_claims(std::string_view claims_json, const verify_options& opts);

}  // namespace pushonce::jwt
