// jwt::secret_from_env, apart from core/jwt.cpp: reading the environment goes through the
// program options' secret reader (core/config), which token verification does not need.
#include <exception>

#include "core/config.hpp"
#include "core/jwt.hpp"  // declares it

namespace pushonce::jwt {

std::string secret_from_env() {
  try {
    return pushonce::secret_from_env("PUSHONCE_JWT_SECRET").value_or("");
  } catch (const std::exception&) {
    return {};  // unreadable or ambiguous: the programs report it at start (gateway/main.cpp)
  }
}

}  // namespace pushonce::jwt
