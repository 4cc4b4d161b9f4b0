#include "core/admission_token.hpp"

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pushonce::admission {

namespace {

struct admission_bio_deleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct admission_pkey_deleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using admission_bio_ptr = std::unique_ptr<BIO, admission_bio_deleter>;
using admission_pkey_ptr = std::unique_ptr<EVP_PKEY, admission_pkey_deleter>;

// A public or private PEM key; nullptr when it is neither.
admission_pkey_ptr admission_read_pem(std::string_view pem, bool want_private) {
  admission_bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  if (want_private)
    return admission_pkey_ptr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  admission_pkey_ptr k(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (k) return k;
  admission_bio_ptr again(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return admission_pkey_ptr(PEM_read_bio_PrivateKey(again.get(), nullptr, nullptr, nullptr));
}

bool admission_is_p256(EVP_PKEY* k) {
  if (!k || EVP_PKEY_is_a(k, "EC") != 1) return false;
  std::array<char, 64> group{};
  std::size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group.data(), group.size(),
                                     &len) != 1)
    return false;
  std::string_view g(group.data(), len);
  return g == "prime256v1" || g == "P-256" || g == "secp256r1";
}

std::string admission_coordinate(EVP_PKEY* k, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(k, name, &bn) != 1 || !bn)
    throw std::invalid_argument("cannot read the public point of the key");
  std::array<unsigned char, 32> buf{};
  int n = BN_bn2binpad(bn, buf.data(), static_cast<int>(buf.size()));
  BN_free(bn);
  if (n != 32) throw std::invalid_argument("the key's public point is not P-256");
  return std::string(reinterpret_cast<const char*>(buf.data()), buf.size());
}

public_key admission_public_of(EVP_PKEY* k) {
  public_key out;
  boost::json::object jwk{{"kty", "EC"},
                          {"crv", "P-256"},
                          {"x", base64url(admission_coordinate(k, OSSL_PKEY_PARAM_EC_PUB_X))},
                          {"y", base64url(admission_coordinate(k, OSSL_PKEY_PARAM_EC_PUB_Y))}};
  out.kid = jwk_thumbprint(jwk);
  jwk["kid"] = out.kid;
  jwk["use"] = "sig";
  jwk["alg"] = "ES256";
  out.jwk = std::move(jwk);
  admission_bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), k) != 1)
    throw std::invalid_argument("cannot write the public key");
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  out.pem.assign(data, static_cast<std::size_t>(len));
  return out;
}

verify_error admission_invalid(std::string why) {
  return {"invalid", std::move(why)};
}

}  // namespace

public_key public_key_of_pem(std::string_view pem) {
  auto k = admission_read_pem(pem, false);
  if (!admission_is_p256(k.get())) throw std::invalid_argument("not a P-256 (EC) key in PEM");
  return admission_public_of(k.get());
}

// ---- signer ---------------------------------------------------------------------------------

struct signer::evp {
  admission_pkey_ptr key;
  EVP_PKEY_CTX* ctx = nullptr;  // initialised for signing once; reused for every token
  EVP_MD* sha256 = nullptr;
  ~evp() {
    EVP_PKEY_CTX_free(ctx);
    EVP_MD_free(sha256);
  }
};

std::unique_ptr<signer> signer::es256(std::string_view private_pem) {
  auto k = admission_read_pem(private_pem, true);
  if (!admission_is_p256(k.get()))
    throw std::invalid_argument("not a P-256 (EC) private key in PEM");
  std::unique_ptr<signer> s(new signer());
  s->public_ = admission_public_of(k.get());
  s->evp_ = new evp();
  s->evp_->key = std::move(k);
  s->evp_->ctx = EVP_PKEY_CTX_new(s->evp_->key.get(), nullptr);
  s->evp_->sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (!s->evp_->ctx || !s->evp_->sha256 || EVP_PKEY_sign_init(s->evp_->ctx) != 1)
    throw std::invalid_argument("cannot sign with that key");
  boost::json::object header{{"alg", "ES256"}, {"typ", "JWT"}, {"kid", s->public_->kid}};
  s->header_b64_ = base64url(boost::json::serialize(header));
  return s;
}

std::unique_ptr<signer> signer::hs256(std::string secret) {
  if (secret.size() < 32)
    throw std::invalid_argument("PUSHONCE_ADMISSION_SECRET needs at least 32 bytes");
  std::unique_ptr<signer> s(new signer());
  s->secret_ = std::move(secret);
  s->header_b64_ = base64url(R"({"alg":"HS256","typ":"JWT"})");
  return s;
}

signer::~signer() {
  delete evp_;
}

std::string signer::sign(const claims& c) const {
  std::string input = header_b64_;
  input += '.';
  input += base64url(claims_json(c));
  std::string sig;
  if (!secret_.empty()) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned len = 0;
    if (!HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
              reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac.data(), &len))
      throw std::runtime_error("admission: HMAC failed");
    sig.assign(reinterpret_cast<const char*>(mac.data()), len);
  } else {
    std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
    unsigned mdlen = 0;
    if (EVP_Digest(input.data(), input.size(), md.data(), &mdlen, evp_->sha256, nullptr) != 1)
      throw std::runtime_error("admission: SHA-256 failed");
    std::array<unsigned char, 80> der{};
    std::size_t derlen = der.size();
    if (EVP_PKEY_sign(evp_->ctx, der.data(), &derlen, md.data(), mdlen) != 1)
      throw std::runtime_error("admission: ECDSA signing failed");
    // JWS wants r || s, 32 bytes each (RFC 7518 §3.4), OpenSSL gives DER.
    const unsigned char* p = der.data();
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(derlen));
    if (!es) throw std::runtime_error("admission: bad ECDSA signature encoding");
    std::array<unsigned char, 64> raw{};
    const BIGNUM* r = nullptr;
    const BIGNUM* s = nullptr;
    ECDSA_SIG_get0(es, &r, &s);
    bool ok = BN_bn2binpad(r, raw.data(), 32) == 32 && BN_bn2binpad(s, raw.data() + 32, 32) == 32;
    ECDSA_SIG_free(es);
    if (!ok) throw std::runtime_error("admission: bad ECDSA signature size");
    sig.assign(reinterpret_cast<const char*>(raw.data()), raw.size());
  }
  input += '.';
  input += base64url(sig);
  return input;
}

// ---- verifier -------------------------------------------------------------------------------

verifier::verifier(std::vector<public_key> keys, std::string hs_secret)
    : secret_(std::move(hs_secret)) {
  std::set<std::string> seen;
  for (auto& k : keys)
    if (seen.insert(k.kid).second) keys_.push_back(std::move(k));
}

verifier::result verifier::verify(std::string_view token, long long now_s) const {
  result out;
  if (token.empty() || token.size() > 8192) {
    out.error = admission_invalid("no token, or over 8192 characters");
    return out;
  }
  auto dot = token.find('.');
  auto header_text =
      dot == std::string_view::npos ? std::nullopt : base64url_bytes(token.substr(0, dot));
  boost::system::error_code ec;
  auto header = header_text ? boost::json::parse(*header_text, ec) : boost::json::value();
  if (!header_text || ec || !header.is_object()) {
    out.error = admission_invalid("malformed token");
    return out;
  }
  auto alg = string_member(header.as_object(), "alg");
  auto kid = string_member(header.as_object(), "kid");
  std::string key;
  jwt_alg_t want = JWT_ALG_NONE;
  if (alg == "ES256") {
    const public_key* found = nullptr;
    for (const auto& k : keys_)
      if (k.kid == kid || (kid.empty() && keys_.size() == 1)) found = &k;
    if (!found) {
      out.error = admission_invalid("signed by an unknown key (kid \"" + kid.substr(0, 64) + "\")");
      return out;
    }
    key = found->pem;
    want = JWT_ALG_ES256;
  } else if (alg == "HS256" && !secret_.empty()) {
    key = secret_;
    want = JWT_ALG_HS256;
  } else {
    out.error = admission_invalid("algorithm \"" + alg.substr(0, 16) + "\" is not accepted");
    return out;
  }
  std::string t(token);
  jwt_t* raw = nullptr;
  int rc = jwt_decode(&raw, t.c_str(), reinterpret_cast<const unsigned char*>(key.data()),
                      static_cast<int>(key.size()));
  std::unique_ptr<jwt_t, void (*)(jwt_t*)> j(raw, jwt_free);
  if (rc != 0 || !j || jwt_get_alg(j.get()) != want) {
    out.error = admission_invalid("bad signature or malformed token");
    return out;
  }
  char* text = jwt_get_grants_json(j.get(), nullptr);
  std::string grants = text ? text : "";
  std::free(text);
  auto c = claims_of_json(grants);
  if (!c) {
    out.error = admission_invalid("claims missing (sub, queue, resource, jti, iat, exp)");
    return out;
  }
  if (c->exp <= now_s) {
    out.error = {"expired", "exp " + std::to_string(c->exp) + " has passed"};
    out.expired = std::move(c);
    return out;
  }
  out.ok = std::move(c);
  return out;
}

std::string verifier::jwks_json() const {
  boost::json::array keys;
  for (const auto& k : keys_) keys.push_back(k.jwk);
  return boost::json::serialize(boost::json::object{{"keys", std::move(keys)}});
}

// ---- options --------------------------------------------------------------------------------

std::string read_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

setup load(const options& o) {
  setup out;
  std::vector<public_key> keys;
  if (!o.key_file.empty()) {
    try {
      out.sign = signer::es256(read_key_file(o.key_file));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("--admission-key " + o.key_file + ": " + e.what());
    }
    keys.push_back(*out.sign->public_half());
  } else if (o.secret && !o.secret->empty()) {
    out.sign = signer::hs256(*o.secret);
  }
  for (const auto& f : o.verify_key_files) {
    try {
      keys.push_back(public_key_of_pem(read_key_file(f)));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("--admission-verify-keys " + f + ": " + e.what());
    }
  }
  out.verify = std::make_shared<verifier>(std::move(keys), o.secret.value_or(""));
  return out;
}

}  // namespace pushonce::admission
