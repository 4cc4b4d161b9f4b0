#include "core/jwt.hpp"

#include <jwt.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/config.hpp"
#include "core/names.hpp"

namespace pushonce::jwt {

namespace {

struct jwt_deleter {
  void operator()(jwt_t* j) const { jwt_free(j); }
};
using jwt_ptr = std::unique_ptr<jwt_t, jwt_deleter>;

failure unauthorized(std::string why) {
  return {"unauthorized", std::move(why)};
}

long long now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string mint(std::string_view user, std::chrono::seconds ttl, std::string_view secret) {
  jwt_t* raw = nullptr;
  if (jwt_new(&raw) != 0) throw std::runtime_error("jwt: out of memory");
  jwt_ptr j(raw);
  std::string u(user);
  jwt_add_grant(j.get(), "sub", u.c_str());
  jwt_add_grant_int(j.get(), "iat", static_cast<long>(now_s()));
  jwt_add_grant_int(j.get(), "exp", static_cast<long>(now_s() + ttl.count()));
  if (jwt_set_alg(j.get(), JWT_ALG_HS256, reinterpret_cast<const unsigned char*>(secret.data()),
                  static_cast<int>(secret.size())) != 0)
    throw std::runtime_error("jwt: cannot use that secret");
  char* text = jwt_encode_str(j.get());
  if (!text) throw std::runtime_error("jwt: encoding failed");
  std::string out(text);
  std::free(text);
  return out;
}

outcome<std::string> verify(std::string_view token, std::string_view secret) {
  if (secret.empty()) return unauthorized("no JWT secret is configured");
  if (token.empty()) return unauthorized("missing token");
  if (token.size() > 8192) return unauthorized("token too long");
  std::string t(token);
  jwt_t* raw = nullptr;
  int rc = jwt_decode(&raw, t.c_str(), reinterpret_cast<const unsigned char*>(secret.data()),
                      static_cast<int>(secret.size()));
  jwt_ptr j(raw);
  if (rc != 0 || !j) return unauthorized("invalid token (malformed or bad signature)");
  if (jwt_get_alg(j.get()) != JWT_ALG_HS256) return unauthorized("token algorithm must be HS256");
  errno = 0;
  long exp = jwt_get_grant_int(j.get(), "exp");
  if (errno != 0) return unauthorized("token has no exp");
  if (exp <= now_s()) return unauthorized("token expired");
  const char* sub = jwt_get_grant(j.get(), "sub");
  if (!sub || !valid_name(sub)) return unauthorized("token has no valid sub");
  return std::string(sub);
}

std::string secret_problem(std::string_view secret) {
  if (secret.empty() || secret.size() >= min_secret_bytes) return {};
  return "the JWT secret (PUSHONCE_JWT_SECRET or PUSHONCE_JWT_SECRET_FILE) has " +
         std::to_string(secret.size()) + " bytes; at least " + std::to_string(min_secret_bytes) +
         " are needed (e.g. head -c 32 /dev/urandom | base64)";
}

std::string secret_from_env() {
  try {
    return pushonce::secret_from_env("PUSHONCE_JWT_SECRET").value_or("");
  } catch (const std::exception&) {
    return {};  // unreadable or ambiguous: the programs report it at start (gateway/main.cpp)
  }
}

}  // namespace pushonce::jwt
