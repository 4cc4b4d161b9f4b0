#pragma once
// Signing keys of a pretend identity provider for tests of --jwt-jwks: an RSA 2048 or EC
// P-256 key pair made with OpenSSL, its public half as a JWK (RFC 7517), and tokens signed
// with it through libjwt. Header-only (unit and e2e tests both use it).

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace pushonce::test {

inline std::string b64url(const std::string& in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(tbl[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(tbl[((val << 8) >> (bits + 8)) & 0x3F]);
  return out;
}

class signing_key {
 public:
  /// "RSA" (RS256) or "EC" (ES256); `kid` names it in the set.
  signing_key(const std::string& type, std::string kid)
      : kid_(std::move(kid)), rsa_(type == "RSA") {
    EVP_PKEY* k = rsa_ ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
    if (!k) throw std::runtime_error("cannot make a key");
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    private_pem_.assign(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    if (rsa_) {
      BIGNUM *bn = nullptr, *be = nullptr;
      EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &bn);
      EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &be);
      jwk_ = R"({"kty":"RSA","use":"sig","kid":")" + kid_ + R"(","n":")" + b64url(bytes(bn)) +
             R"(","e":")" + b64url(bytes(be)) + "\"}";
      BN_free(bn);
      BN_free(be);
    } else {
      unsigned char point[65];
      std::size_t len = 0;
      EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &len);
      std::string p(reinterpret_cast<char*>(point), len);
      jwk_ = R"({"kty":"EC","crv":"P-256","kid":")" + kid_ + R"(","x":")" +
             b64url(p.substr(1, 32)) + R"(","y":")" + b64url(p.substr(33, 32)) + "\"}";
    }
    EVP_PKEY_free(k);
  }

  const std::string& jwk() const { return jwk_; }
  const std::string& kid() const { return kid_; }

  /// A token with `claims` (a JSON object's text) signed by this key; `kid` in its header
  /// unless `with_kid` is false.
  std::string sign(const std::string& claims, bool with_kid = true) const {
    jwt_t* j = nullptr;
    jwt_new(&j);
    jwt_add_grants_json(j, claims.c_str());
    if (with_kid) jwt_add_header(j, "kid", kid_.c_str());
    jwt_set_alg(j, rsa_ ? JWT_ALG_RS256 : JWT_ALG_ES256,
                reinterpret_cast<const unsigned char*>(private_pem_.data()),
                static_cast<int>(private_pem_.size()));
    char* s = jwt_encode_str(j);
    std::string out = s ? s : "";
    std::free(s);
    jwt_free(j);
    return out;
  }

 private:
  static std::string bytes(const BIGNUM* bn) {
    std::string out(static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
    return out;
  }
  std::string kid_;
  bool rsa_;
  std::string private_pem_;
  std::string jwk_;
};

/// {"keys":[...]} of the keys' public halves.
inline std::string key_set_json(const std::vector<const signing_key*>& keys) {
  std::string out = R"({"keys":[)";
  for (std::size_t i = 0; i < keys.size(); ++i) out += (i ? "," : "") + keys[i]->jwk();
  return out + "]}";
}

}  // namespace pushonce::test
