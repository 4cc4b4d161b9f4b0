// core/jwt.cpp reads its secret through pushonce::secret_from_env (core/config.cpp, which
// needs Boost.Program_options). The JWT target never calls it, so it is a stub here.
#include "core/config.hpp"

namespace pushonce {

std::optional<std::string> secret_from_env(const std::string&) {
  return std::nullopt;
}

}  // namespace pushonce
