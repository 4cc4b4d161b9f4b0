#include <openssl/evp.h>

#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <stdexcept>

#include "core/admission_token.hpp"

// The claims of an admission token and the JOSE encodings around them (base64url, the
// RFC 7638 thumbprint); the keys, signing and verification are in admission_token.cpp.

namespace pushonce::admission {

std::string sha256(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("admission: SHA-256 failed");
  return std::string(reinterpret_cast<const char*>(md.data()), len);
}

std::string string_member(const boost::json::object& o, std::string_view name) {
  auto it = o.find(name);
  if (it == o.end() || !it->value().is_string()) return {};
  return std::string(it->value().as_string());
}

namespace {

constexpr const char* admission_b64_table =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::optional<long long> admission_int_member(const boost::json::object& o, const char* name) {
  auto it = o.find(name);
  if (it == o.end()) return std::nullopt;
  if (it->value().is_int64()) return it->value().as_int64();
  if (it->value().is_uint64() && it->value().as_uint64() <= (1ULL << 62))
    return static_cast<long long>(it->value().as_uint64());
  return std::nullopt;
}

}  // namespace

claims claims_for(std::string_view issuer, std::string_view user, std::string_view queue,
                  std::string_view resource, std::string_view id, long long now_s,
                  std::chrono::seconds ttl) {
  return claims{std::string(issuer),   std::string(user), std::string(queue),
                std::string(resource), std::string(id),   now_s,
                now_s + ttl.count()};
}

std::string claims_json(const claims& c) {
  boost::json::object o{
      {"iss", c.iss}, {"sub", c.sub}, {"queue", c.queue}, {"resource", c.resource},
      {"jti", c.jti}, {"iat", c.iat}, {"exp", c.exp}};
  return boost::json::serialize(o);
}

std::optional<claims> claims_of_json(std::string_view json) {
  boost::system::error_code ec;
  auto v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.as_object();
  claims c;
  c.iss = string_member(o, "iss");
  c.sub = string_member(o, "sub");
  c.queue = string_member(o, "queue");
  c.resource = string_member(o, "resource");
  c.jti = string_member(o, "jti");
  auto iat = admission_int_member(o, "iat");
  auto exp = admission_int_member(o, "exp");
  if (c.sub.empty() || c.queue.empty() || c.resource.empty() || c.jti.empty() || !iat || !exp)
    return std::nullopt;
  c.iat = *iat;
  c.exp = *exp;
  return c;
}

std::string base64url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  unsigned val = 0;
  int bits = -6;
  for (unsigned char c : bytes) {
    val = (val << 8) | c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(admission_b64_table[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(admission_b64_table[((val << 8) >> (bits + 8)) & 0x3F]);
  return out;
}

std::optional<std::string> base64url_bytes(std::string_view text) {
  std::string out;
  unsigned val = 0;
  int bits = -8;
  for (char c : text) {
    int d = 0;
    if (c >= 'A' && c <= 'Z')
      d = c - 'A';
    else if (c >= 'a' && c <= 'z')
      d = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      d = c - '0' + 52;
    else if (c == '-')
      d = 62;
    else if (c == '_')
      d = 63;
    else if (c == '=')
      break;
    else
      return std::nullopt;
    val = (val << 6) | static_cast<unsigned>(d);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

std::string jwk_thumbprint(const boost::json::object& jwk) {
  auto kty = string_member(jwk, "kty");
  std::vector<const char*> members;
  if (kty == "EC")
    members = {"crv", "kty", "x", "y"};
  else if (kty == "RSA")
    members = {"e", "kty", "n"};
  else if (kty == "oct")
    members = {"k", "kty"};
  else
    throw std::invalid_argument("jwk: kty must be EC, RSA or oct");
  // Lexicographic order, no whitespace (RFC 7638 §3.3): serialize keeps insertion order.
  boost::json::object canonical;
  for (const char* m : members) {
    auto value = string_member(jwk, m);
    if (value.empty()) throw std::invalid_argument(std::string("jwk: no \"") + m + "\"");
    canonical[m] = value;
  }
  return base64url(sha256(boost::json::serialize(canonical)));
}

}  // namespace pushonce::admission
