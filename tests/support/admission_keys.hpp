#pragma once
// P-256 key pairs for tests of admission tokens: a new private key's PEM, and the public
// half's PEM, made with OpenSSL. Header-only (unit and e2e tests both use it).

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <stdexcept>
#include <string>

namespace pushonce::test {

namespace admission_keys_detail {
inline std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}
}  // namespace admission_keys_detail

/// A new P-256 private key (PKCS#8 PEM).
inline std::string new_p256_private_pem() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  if (!k) throw std::runtime_error("cannot make a P-256 key");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
  EVP_PKEY_free(k);
  return admission_keys_detail::bio_text(bio);
}

/// The public half of a private key's PEM (SubjectPublicKeyInfo PEM).
inline std::string p256_public_pem(const std::string& private_pem) {
  BIO* in = BIO_new_mem_buf(private_pem.data(), static_cast<int>(private_pem.size()));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(in, nullptr, nullptr, nullptr);
  BIO_free(in);
  if (!k) throw std::runtime_error("not a private key");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, k);
  EVP_PKEY_free(k);
  return admission_keys_detail::bio_text(bio);
}

}  // namespace pushonce::test
