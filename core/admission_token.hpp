#pragma once
// Admission tokens (docs/protocol.md "Admission tokens"): the JWT an assignment carries in
// `data.admission`, its claims, the signing key and the public keys a backend verifies it
// with (the JWKS). Socket-free; the leader signs (leader/admission_assigner), the gateway
// publishes the keys, `pushonce-leader admission verify` verifies.
//
//   ES256  the P-256 private key of --admission-key FILE; `kid` = the RFC 7638 thumbprint of
//          its public JWK. Signed through OpenSSL's EVP with the key loaded once.
//   HS256  PUSHONCE_ADMISSION_SECRET (through libjwt); no kid, nothing to publish.
//
// The JWKS also lists the public keys of --admission-verify-keys FILE... (PEM), e.g. the
// previous key during a rotation.

#include <boost/json/object.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce::admission {

struct claims {
  std::string iss;
  std::string sub;  // the user
  std::string queue;
  std::string resource;
  std::string jti;    // the assignment's message id
  long long iat = 0;  // seconds since the epoch
  long long exp = 0;  // iat + the token's lifetime
};

/// The claims of an assignment made at `now_s` (seconds since the epoch).
claims claims_for(std::string_view issuer, std::string_view user, std::string_view queue,
                  std::string_view resource, std::string_view id, long long now_s,
                  std::chrono::seconds ttl);

/// The payload text: the members in a fixed order (iss, sub, queue, resource, jti, iat, exp).
std::string claims_json(const claims& c);
/// The claims of a payload; std::nullopt when one is missing or not of its type.
std::optional<claims> claims_of_json(std::string_view json);

/// base64url without padding (RFC 7515 §2).
std::string base64url(std::string_view bytes);
/// The bytes of base64url text (padding tolerated); std::nullopt when it is not base64url.
std::optional<std::string> base64url_bytes(std::string_view text);

/// RFC 7638: base64url(SHA-256(the required members in lexicographic order, no spaces)):
/// EC crv, kty, x, y; RSA e, kty, n; oct k, kty. Throws std::invalid_argument for a JWK
/// without one of them or of another kty.
std::string jwk_thumbprint(const boost::json::object& jwk);

/// A P-256 public key as a backend sees it.
struct public_key {
  std::string kid;          // its thumbprint
  std::string pem;          // SubjectPublicKeyInfo PEM (what libjwt verifies with)
  boost::json::object jwk;  // {"kty":"EC","crv":"P-256","x","y","kid","use":"sig","alg":"ES256"}
};

/// The public half of a PEM key (a public key, or a private key whose public half is taken).
/// Throws std::invalid_argument when it is not a P-256 key.
public_key public_key_of_pem(std::string_view pem);

/// Signs tokens. ES256 keeps the private key loaded (one sign costs one ECDSA signature);
/// HS256 signs with the shared secret. Thread-compatible: one signer per thread.
class signer {
 public:
  /// A P-256 private key's PEM; throws std::invalid_argument for anything else.
  static std::unique_ptr<signer> es256(std::string_view private_pem);
  /// An HS256 secret of at least 32 bytes; throws std::invalid_argument otherwise.
  static std::unique_ptr<signer> hs256(std::string secret);
  ~signer();
  signer(const signer&) = delete;
  signer& operator=(const signer&) = delete;

  /// The compact JWT of these claims.
  std::string sign(const claims& c) const;
  const char* alg() const { return secret_.empty() ? "ES256" : "HS256"; }
  /// The ES256 key's public half; std::nullopt with HS256.
  const std::optional<public_key>& public_half() const { return public_; }

 private:
  signer() = default;
  struct evp;
  evp* evp_ = nullptr;  // ES256: the loaded key and a signing context
  std::string secret_;  // HS256
  std::optional<public_key> public_;
  std::string header_b64_;  // base64url of the fixed header
};

/// Why a token was refused: "invalid" (malformed, bad signature, unknown key, wrong
/// algorithm, claims missing) or "expired"; `why` says more.
struct verify_error {
  std::string code;
  std::string why;
};

/// SHA-256 of `data` (32 raw bytes), through OpenSSL's EVP.
std::string sha256(std::string_view data);

/// The string member `name` of a JSON object; "" when it is absent or not a string.
std::string string_member(const boost::json::object& o, std::string_view name);

/// Verifies tokens with the public keys (ES256, by kid) and the HS256 secret, if any.
class verifier {
 public:
  verifier(std::vector<public_key> keys, std::string hs_secret);
  /// The token's claims when its signature holds and exp is after `now_s`; else the error.
  /// The issuer is not judged here (the caller compares it).
  struct result {
    std::optional<claims> ok;
    verify_error error;
    /// With error "expired": the claims of the token, whose signature holds (online, a live
    /// admission's lease decides, not exp: docs/capacity.md).
    std::optional<claims> expired;
  };
  result verify(std::string_view token, long long now_s) const;
  /// {"keys":[...]}: every public key, each once.
  std::string jwks_json() const;
  const std::vector<public_key>& keys() const { return keys_; }

 private:
  std::vector<public_key> keys_;
  std::string secret_;
};

/// The admission options common to every program (core/config).
struct options {
  std::string key_file;                       // --admission-key / PUSHONCE_ADMISSION_KEY
  std::optional<std::string> secret;          // PUSHONCE_ADMISSION_SECRET (or _FILE)
  std::string issuer = "pushonce";            // --admission-issuer
  std::chrono::seconds ttl{600};              // --admission-ttl
  std::vector<std::string> verify_key_files;  // --admission-verify-keys
};

/// What a program makes of the options: the signer (none when neither key nor secret is
/// given) and the verifier with every public key. Throws std::invalid_argument naming the
/// file that cannot be read or is not a P-256 key.
struct setup {
  std::unique_ptr<signer> sign;
  std::shared_ptr<const verifier> verify;
};
setup load(const options& o);

/// A PEM file's text; throws std::invalid_argument when it cannot be read.
std::string read_key_file(const std::string& path);

}  // namespace pushonce::admission
