// bench_admission_sign: the CPU an admission token costs the leader (core/admission_token).
// Signs N tokens of typical claims with a P-256 key (ES256, --key FILE or a new key) and
// with an HS256 secret, and verifies N ES256 tokens as a backend would, on one thread;
// prints one JSON line with the CPU time per token (CLOCK_PROCESS_CPUTIME_ID).
//
//   bench_admission_sign [--tokens N] [--key FILE]

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/admission_token.hpp"

namespace {

double bench_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::string bench_new_key() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  EVP_PKEY_free(k);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  long long n = 20000;
  std::string key_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--tokens") == 0) n = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--key") == 0) key_file = argv[i + 1];
  }
  if (n < 1) n = 1;
  namespace adm = pushonce::admission;
  auto pem = key_file.empty() ? bench_new_key() : adm::read_key_file(key_file);
  auto es = adm::signer::es256(pem);
  auto hs = adm::signer::hs256(std::string(32, 's'));
  const long long now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  std::vector<std::string> tokens;
  tokens.reserve(static_cast<std::size_t>(n));
  auto claims_of = [&](long long i) {
    return adm::claims_for("pushonce", "user-" + std::to_string(i), "default",
                           "seat-" + std::to_string(i), std::to_string((i + 1) * 4096 + 16), now,
                           std::chrono::seconds(600));
  };
  // Warm-up, then ES256.
  for (int i = 0; i < 200; ++i) es->sign(claims_of(i));
  auto t0 = bench_cpu_seconds();
  auto w0 = std::chrono::steady_clock::now();
  for (long long i = 0; i < n; ++i) tokens.push_back(es->sign(claims_of(i)));
  auto es_cpu = bench_cpu_seconds() - t0;
  auto es_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  // The claims alone (what signing costs beyond the signature).
  t0 = bench_cpu_seconds();
  std::size_t sink = 0;
  for (long long i = 0; i < n; ++i) sink += adm::claims_json(claims_of(i)).size();
  auto claims_cpu = bench_cpu_seconds() - t0;
  t0 = bench_cpu_seconds();
  for (long long i = 0; i < n; ++i) sink += hs->sign(claims_of(i)).size();
  auto hs_cpu = bench_cpu_seconds() - t0;
  // The bare ECDSA signature of a digest with the same key (OpenSSL's floor for a token).
  BIO* kb = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* raw_key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  EVP_PKEY_CTX* raw_ctx = EVP_PKEY_CTX_new(raw_key, nullptr);
  EVP_PKEY_sign_init(raw_ctx);
  unsigned char digest[32] = {1, 2, 3};
  t0 = bench_cpu_seconds();
  for (long long i = 0; i < n; ++i) {
    unsigned char der[80];
    std::size_t len = sizeof der;
    digest[0] = static_cast<unsigned char>(i);
    EVP_PKEY_sign(raw_ctx, der, &len, digest, sizeof digest);
    sink += len;
  }
  auto raw_cpu = bench_cpu_seconds() - t0;
  EVP_PKEY_CTX_free(raw_ctx);
  EVP_PKEY_free(raw_key);
  adm::verifier v({*es->public_half()}, "");
  const long long m = std::min<long long>(n, 5000);
  t0 = bench_cpu_seconds();
  long long valid = 0;
  for (long long i = 0; i < m; ++i)
    valid += v.verify(tokens[static_cast<std::size_t>(i)], now).ok ? 1 : 0;
  auto verify_cpu = bench_cpu_seconds() - t0;
  std::printf(
      "{\"tokens\":%lld,\"es256_sign_cpu_us\":%.1f,\"es256_sign_wall_us\":%.1f,"
      "\"ecdsa_p256_bare_cpu_us\":%.1f,"
      "\"claims_only_cpu_us\":%.2f,\"hs256_sign_cpu_us\":%.2f,\"es256_verify_cpu_us\":%.1f,"
      "\"verified\":%lld,\"token_bytes\":%zu,\"sink\":%zu}\n",
      n, es_cpu * 1e6 / static_cast<double>(n), es_wall * 1e6 / static_cast<double>(n),
      raw_cpu * 1e6 / static_cast<double>(n), claims_cpu * 1e6 / static_cast<double>(n),
      hs_cpu * 1e6 / static_cast<double>(n), verify_cpu * 1e6 / static_cast<double>(m), valid,
      tokens.front().size(), sink % 10);
  return valid == m ? 0 : 1;
}
