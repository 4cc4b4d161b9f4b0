#include "core/jwt.hpp"

#include <jwt.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "core/jwt_claims.hpp"
#include "core/names.hpp"

namespace pushonce::jwt {

namespace {

struct jwt_deleter {
  void operator()(jwt_t* j) const { jwt_free(j); }
};
using jwt_ptr = std::unique_ptr<jwt_t, jwt_deleter>;

failure unauthorized(std::string why) {
  return {errc::unauthorized, std::move(why)};
}

long long now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A time claim: absent, a whole number of seconds, or bad (not a number).
enum class claim_kind { absent, number, bad };
struct time_claim {
  claim_kind kind = claim_kind::absent;
  long long value = 0;
};

time_claim time_of(const boost::json::object& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end()) return {};
  const auto& v = it->value();
  if (v.is_int64()) return {claim_kind::number, v.as_int64()};
  if (v.is_uint64() && v.as_uint64() <= 1ULL << 62)
    return {claim_kind::number, static_cast<long long>(v.as_uint64())};
  if (v.is_double() && v.as_double() > -1e15 && v.as_double() < 1e15)
    return {claim_kind::number, static_cast<long long>(v.as_double())};
  return {claim_kind::bad, 0};
}

bool audience_holds(const boost::json::object& claims, const std::string& want) {
  auto it = claims.find("aud");
  if (it == claims.end()) return false;
  if (it->value().is_string()) return it->value().as_string() == want;
  if (!it->value().is_array()) return false;
  for (const auto& a : it->value().as_array())
    if (a.is_string() && a.as_string() == want) return true;
  return false;
}

// The claims after the signature and the algorithm were checked.
std::optional<failure> check_claims(const boost::json::object& claims, const verify_options& o) {
  const long long now = o.now ? *o.now : now_s();
  const long long leeway = o.leeway.count();
  auto exp = time_of(claims, "exp");
  auto nbf = time_of(claims, "nbf");
  auto iat = time_of(claims, "iat");
  if (exp.kind != claim_kind::number) return unauthorized("token has no exp");
  if (nbf.kind == claim_kind::bad || iat.kind == claim_kind::bad)
    return unauthorized("token has a bad nbf or iat");
  if (exp.value + leeway <= now) return unauthorized("token expired");
  if (nbf.kind == claim_kind::number && nbf.value - leeway > now)
    return unauthorized("token not valid yet (nbf)");
  if (iat.kind == claim_kind::number && iat.value - leeway > now)
    return unauthorized("token issued in the future (iat)");
  if (o.max_lifetime.count() > 0) {
    long long from = iat.kind == claim_kind::number ? iat.value : now;
    if (exp.value - from > o.max_lifetime.count() + leeway)
      return unauthorized("token lives longer than the gateway accepts");
  }
  if (o.issuer) {
    auto it = claims.find("iss");
    if (it == claims.end() || !it->value().is_string() || it->value().as_string() != *o.issuer)
      return unauthorized("token has the wrong iss");
  }
  if (o.audience && !audience_holds(claims, *o.audience))
    return unauthorized("token has the wrong aud");
  return std::nullopt;
}

}  // namespace

std::string mint(std::string_view user, std::chrono::seconds ttl, std::string_view secret) {
  if (ttl > max_ttl || ttl.count() == 0 || ttl < -max_ttl)
    throw std::invalid_argument("jwt: a token's lifetime must be 1 s to 10 years");
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

outcome<identity> verify(std::string_view token, std::string_view secret,
                         const verify_options& opts) {
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
  char* text = jwt_get_grants_json(j.get(), nullptr);
  if (!text) return unauthorized("token has no claims");
  std::string claims(text);
  std::free(text);
  return identity_of_claims(claims, opts);
}

outcome<identity> identity_of_claims(std::string_view claims_json, const verify_options& opts) {
  boost::system::error_code ec;
  auto claims = boost::json::parse(claims_json, ec);
  if (ec || !claims.is_object()) return unauthorized("token claims are not a JSON object");
  if (auto why = check_claims(claims.as_object(), opts)) return *why;
  auto sub = claims.as_object().find("sub");
  if (sub == claims.as_object().end() || !sub->value().is_string() ||
      !valid_name(std::string(sub->value().as_string())))
    return unauthorized("token has no valid sub");
  identity who{std::string(sub->value().as_string()), time_of(claims.as_object(), "exp").value,
               std::nullopt};
  if (auto iat = time_of(claims.as_object(), "iat"); iat.kind == claim_kind::number)
    who.iat = iat.value;
  return who;
}

std::string secret_problem(std::string_view secret) {
  if (secret.empty() || secret.size() >= min_secret_bytes) return {};
  return "the JWT secret (PUSHONCE_JWT_SECRET or PUSHONCE_JWT_SECRET_FILE) has " +
         std::to_string(secret.size()) + " bytes; at least " + std::to_string(min_secret_bytes) +
         " are needed (e.g. head -c 32 /dev/urandom | base64)";
}

}  // namespace pushonce::jwt
