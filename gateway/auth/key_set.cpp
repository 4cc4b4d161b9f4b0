#include "gateway/auth/key_set.hpp"

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/admission_token.hpp"
#include "core/jwt_claims.hpp"

namespace pushonce::gateway {

namespace {

failure unauthorized(std::string why) {
  return {errc::unauthorized, std::move(why)};
}

// base64url (RFC 7515 §2) -> bytes: the one decoder, core/admission_token's.
using ::pushonce::admission::base64url_bytes;

std::string field(const boost::json::object& o, const char* name) {
  auto it = o.find(name);
  if (it == o.end() || !it->value().is_string()) return {};
  return std::string(it->value().as_string());
}

std::string bytes_of(const boost::json::object& k, const char* name, const std::string& which) {
  auto v = base64url_bytes(field(k, name));
  if (!v || v->empty())
    throw std::invalid_argument(which + ": \"" + name + "\" is missing or not base64url");
  return *v;
}

// A public key as PEM, from OpenSSL parameters.
std::string pem_of(const char* type, OSSL_PARAM_BLD* bld, const std::string& which) {
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  bool ok = params && ctx && EVP_PKEY_fromdata_init(ctx) == 1 &&
            EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) == 1;
  std::string out;
  if (ok) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (bio && PEM_write_bio_PUBKEY(bio, pkey) == 1) {
      char* data = nullptr;
      long n = BIO_get_mem_data(bio, &data);
      out.assign(data, static_cast<std::size_t>(n));
    }
    BIO_free(bio);
  }
  EVP_PKEY_free(pkey);
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  if (out.empty()) throw std::invalid_argument(which + ": not a valid public key");
  return out;
}

std::string rsa_pem(const boost::json::object& k, const std::string& which) {
  auto n = bytes_of(k, "n", which);
  auto e = bytes_of(k, "e", which);
  if (n.size() < 256) throw std::invalid_argument(which + ": an RSA key needs at least 2048 bits");
  BIGNUM* bn = BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()),
                         static_cast<int>(n.size()), nullptr);
  BIGNUM* be = BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()),
                         static_cast<int>(e.size()), nullptr);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn);
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be);
  std::string pem;
  try {
    pem = pem_of("RSA", bld, which);
  } catch (...) {
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    throw;
  }
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn);
  BN_free(be);
  return pem;
}

std::string ec_pem(const boost::json::object& k, const std::string& which) {
  if (field(k, "crv") != "P-256") throw std::invalid_argument(which + ": only crv P-256 (ES256)");
  auto x = bytes_of(k, "x", which);
  auto y = bytes_of(k, "y", which);
  if (x.size() != 32 || y.size() != 32)
    throw std::invalid_argument(which + ": x and y must be 32 bytes each");
  std::string point = "\x04" + x + y;
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
  OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
  std::string pem;
  try {
    pem = pem_of("EC", bld, which);
  } catch (...) {
    OSSL_PARAM_BLD_free(bld);
    throw;
  }
  OSSL_PARAM_BLD_free(bld);
  return pem;
}

}  // namespace

std::shared_ptr<const key_set> key_set::parse(std::string_view json) {
  boost::system::error_code ec;
  auto doc = boost::json::parse(json, ec);
  if (ec || !doc.is_object() || !doc.as_object().contains("keys") ||
      !doc.as_object().at("keys").is_array())
    throw std::invalid_argument("not a JSON Web Key Set (an object with a \"keys\" array)");
  auto set = std::make_shared<key_set>();
  std::size_t i = 0;
  for (const auto& v : doc.as_object().at("keys").as_array()) {
    std::string which = "key " + std::to_string(i++);
    if (!v.is_object()) throw std::invalid_argument(which + ": not an object");
    const auto& k = v.as_object();
    if (!field(k, "kid").empty()) which += " (kid " + field(k, "kid") + ")";
    auto use = field(k, "use");
    if (!use.empty() && use != "sig") continue;
    auto kty = field(k, "kty");
    key out;
    out.kid = field(k, "kid");
    if (kty == "RSA") {
      out.alg = "RS256";
      out.pem = rsa_pem(k, which);
    } else if (kty == "EC") {
      out.alg = "ES256";
      out.pem = ec_pem(k, which);
    } else {
      continue;
    }
    auto alg = field(k, "alg");
    if (!alg.empty() && alg != out.alg)
      throw std::invalid_argument(which + ": alg " + alg + " (only RS256 and ES256)");
    set->keys_.push_back(std::move(out));
  }
  if (set->keys_.empty()) throw std::invalid_argument("no RSA or EC P-256 signing key in the set");
  return set;
}

std::shared_ptr<const key_set> key_set::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse(text.str());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

std::string token_alg(std::string_view token) {
  auto dot = token.find('.');
  if (dot == std::string_view::npos) return {};
  auto header = base64url_bytes(token.substr(0, dot));
  if (!header) return {};
  boost::system::error_code ec;
  auto h = boost::json::parse(*header, ec);
  if (ec || !h.is_object()) return {};
  return field(h.as_object(), "alg");
}

outcome<jwt::identity> key_set::verify(std::string_view token,
                                       const jwt::verify_options& opts) const {
  if (token.size() > 8192) return unauthorized("token too long");
  auto dot = token.find('.');
  if (dot == std::string_view::npos) return unauthorized("invalid token (malformed)");
  auto header_text = base64url_bytes(token.substr(0, dot));
  boost::system::error_code ec;
  auto header = header_text ? boost::json::parse(*header_text, ec) : boost::json::value();
  if (!header_text || ec || !header.is_object()) return unauthorized("invalid token (malformed)");
  auto alg = field(header.as_object(), "alg");
  auto kid = field(header.as_object(), "kid");
  const key* k = nullptr;
  if (kid.empty() && keys_.size() == 1) k = &keys_.front();
  for (const auto& candidate : keys_)
    if (!kid.empty() && candidate.kid == kid) k = &candidate;
  if (!k) return unauthorized("token signed by an unknown key (kid \"" + kid.substr(0, 64) + "\")");
  if (alg != k->alg) return unauthorized("token algorithm must be " + k->alg + " for its key");
  std::string t(token);
  jwt_t* raw = nullptr;
  int rc = jwt_decode(&raw, t.c_str(), reinterpret_cast<const unsigned char*>(k->pem.data()),
                      static_cast<int>(k->pem.size()));
  std::unique_ptr<jwt_t, void (*)(jwt_t*)> j(raw, jwt_free);
  if (rc != 0 || !j) return unauthorized("invalid token (malformed or bad signature)");
  auto want = k->alg == "RS256" ? JWT_ALG_RS256 : JWT_ALG_ES256;
  if (jwt_get_alg(j.get()) != want) return unauthorized("token algorithm must be " + k->alg);
  char* claims = jwt_get_grants_json(j.get(), nullptr);
  if (!claims) return unauthorized("token has no claims");
  std::string text(claims);
  std::free(claims);
  return jwt::identity_of_claims(text, opts);
}

}  // namespace pushonce::gateway
