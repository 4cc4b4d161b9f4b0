#include "core/pow_challenge.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <array>
#include <charconv>
#include <stdexcept>
#include <vector>

namespace pushonce {

namespace {

constexpr char pow_hex_digits[] = "0123456789abcdef";

std::string pow_to_hex(const unsigned char* p, std::size_t n) {
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = pow_hex_digits[p[i] >> 4];
    s[2 * i + 1] = pow_hex_digits[p[i] & 15];
  }
  return s;
}

bool pow_all_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<long long> pow_digits(std::string_view s, std::size_t max_len) {
  if (s.empty() || s.size() > max_len) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Each part as "<length>:<bytes>", so that no two different inputs give one MAC input.
void pow_append_part(std::string& out, std::string_view part) {
  out += std::to_string(part.size());
  out += ':';
  out += part;
}

constexpr std::size_t pow_mac_bytes = 16;

}  // namespace

std::string_view pow_reason(pow_verdict v) {
  switch (v) {
    case pow_verdict::ok:
      return "ok";
    case pow_verdict::missing:
      return "this queue asks for a proof of work: solve the challenge and send \"pow\"";
    case pow_verdict::malformed:
      return "the proof of work is malformed";
    case pow_verdict::forged:
      return "the proof of work was not issued for this user and queue";
    case pow_verdict::expired:
      return "the proof of work's challenge has expired";
    case pow_verdict::too_easy:
      return "the queue now asks for more bits: solve the new challenge";
    case pow_verdict::unsolved:
      return "the nonce does not solve the challenge";
  }
  return "bad proof of work";
}

int leading_zero_bits(const unsigned char* digest, std::size_t size) {
  int bits = 0;
  for (std::size_t i = 0; i < size; ++i) {
    if (digest[i] == 0) {
      bits += 8;
      continue;
    }
    unsigned char b = digest[i];
    while ((b & 0x80) == 0) {
      ++bits;
      b = static_cast<unsigned char>(b << 1);
    }
    break;
  }
  return bits;
}

bool pow_solves(std::string_view prefix, std::string_view nonce, int bits) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
            EVP_DigestUpdate(ctx, prefix.data(), prefix.size()) == 1 &&
            EVP_DigestUpdate(ctx, nonce.data(), nonce.size()) == 1 &&
            EVP_DigestFinal_ex(ctx, d.data(), nullptr) == 1;
  EVP_MD_CTX_free(ctx);
  return ok && leading_zero_bits(d.data(), d.size()) >= bits;
}

pow_gate::pow_gate(std::string secret, std::chrono::milliseconds ttl)
    : secret_(std::move(secret)), ttl_(ttl) {
  if (secret_.empty()) throw std::invalid_argument("pow_gate: empty secret");
}

std::string pow_gate::mac_hex(std::string_view user, std::string_view queue,
                              std::string_view expires_at, std::string_view bits,
                              std::string_view random) const {
  std::string input;
  input.reserve(64 + user.size() + queue.size());
  for (auto part : {std::string_view("pow1"), user, queue, expires_at, bits, random})
    pow_append_part(input, part);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
            reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len) ||
      len < pow_mac_bytes)
    return {};
  return pow_to_hex(mac, pow_mac_bytes);
}

pow_challenge pow_gate::issue(std::string_view user, std::string_view queue, int bits,
                              long long now_ms, std::string_view random) const {
  pow_challenge c;
  c.bits = bits < 1 ? 1 : (bits > max_bits ? max_bits : bits);
  c.expires_at = now_ms + ttl_.count();
  auto exp = std::to_string(c.expires_at);
  auto b = std::to_string(c.bits);
  c.id = exp + "." + b + "." + std::string(random) + "." + mac_hex(user, queue, exp, b, random);
  c.prefix = c.id + ".";
  return c;
}

pow_check pow_gate::verify(std::string_view user, std::string_view queue, int min_bits,
                           const std::optional<pow_solution>& s, long long now_ms) const {
  pow_check out;
  if (!s) return out;  // missing
  out.verdict = pow_verdict::malformed;
  std::string_view id = s->id;
  if (id.size() > max_id_size || s->nonce.empty() || s->nonce.size() > max_nonce_size) return out;
  // "<expires_at>.<bits>.<random>.<mac>"
  std::string_view parts[4];
  std::size_t from = 0;
  for (int i = 0; i < 4; ++i) {
    auto dot = i < 3 ? id.find('.', from) : id.size();
    if (dot == std::string_view::npos) return out;
    parts[i] = id.substr(from, dot - from);
    from = dot + 1;
  }
  if (parts[3].find('.') != std::string_view::npos) return out;
  auto expires_at = pow_digits(parts[0], 15);
  auto bits = pow_digits(parts[1], 2);
  if (!expires_at || !bits || *bits < 1 || *bits > max_bits) return out;
  if (parts[2].size() < 16 || parts[2].size() > 64 || !pow_all_hex(parts[2])) return out;
  if (parts[3].size() != 2 * pow_mac_bytes || !pow_all_hex(parts[3])) return out;
  auto mac = mac_hex(user, queue, parts[0], parts[1], parts[2]);
  if (mac.size() != parts[3].size() ||
      CRYPTO_memcmp(mac.data(), parts[3].data(), mac.size()) != 0) {
    out.verdict = pow_verdict::forged;
    return out;
  }
  if (*expires_at <= now_ms) {
    out.verdict = pow_verdict::expired;
    return out;
  }
  if (*bits < min_bits) {
    out.verdict = pow_verdict::too_easy;
    return out;
  }
  std::string prefix(id);
  prefix += '.';
  if (!pow_solves(prefix, s->nonce, static_cast<int>(*bits))) {
    out.verdict = pow_verdict::unsolved;
    return out;
  }
  out.verdict = pow_verdict::ok;
  out.token = std::string(parts[2]);
  out.ttl_ms = *expires_at - now_ms + 1000;
  return out;
}

std::string random_hex_secure(std::size_t bytes) {
  std::vector<unsigned char> b(bytes);
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1)
    throw std::runtime_error("RAND_bytes failed");
  return pow_to_hex(b.data(), b.size());
}

}  // namespace pushonce
