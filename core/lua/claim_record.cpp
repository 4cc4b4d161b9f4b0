#include "core/lua/claim_record.hpp"

#include <string_view>

namespace pushonce::lua {

std::optional<long long> record_number(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::optional<claim_record> parse_claim_record(const redis::reply& value) {
  claim_record r;
  if (value.is_nil()) return r;
  if (!value.is_string()) return std::nullopt;
  std::string_view v = value.str;
  auto rest = v.size() > 2 ? v.substr(2) : std::string_view{};
  if (v.starts_with("l:")) {  // l:<owner>:<until>:<attempts>
    auto a = rest.rfind(':');
    auto u = a == std::string_view::npos ? a : rest.rfind(':', a - 1);
    if (u == std::string_view::npos || u == 0) return std::nullopt;
    auto until = record_number(rest.substr(u + 1, a - u - 1));
    auto attempts = record_number(rest.substr(a + 1));
    if (!until || !attempts) return std::nullopt;
    r.state = claim_record::kind::leased;
    r.owner = std::string(rest.substr(0, u));
    r.until_ms = *until;
    r.attempts = *attempts;
  } else if (v.starts_with("p:")) {  // p:<offset>:<attempts>
    auto colon = rest.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto offset = record_number(rest.substr(0, colon));
    auto attempts = record_number(rest.substr(colon + 1));
    if (!offset || !attempts) return std::nullopt;
    r.state = claim_record::kind::delivered;
    r.unpublished = true;
    r.offset = *offset;
    r.attempts = *attempts;
  } else if (v.starts_with("r:")) {
    auto attempts = record_number(rest);
    if (!attempts) return std::nullopt;
    r.state = claim_record::kind::released;
    r.attempts = *attempts;
  } else if (v.starts_with("x:")) {  // x:<attempts>:<reason>
    auto colon = rest.find(':');
    auto attempts = record_number(rest.substr(0, colon));
    if (!attempts) return std::nullopt;
    r.state = claim_record::kind::dead;
    r.attempts = *attempts;
    if (colon != std::string_view::npos) r.reason = std::string(rest.substr(colon + 1));
  } else {  // <offset>[:<attempts>]
    auto colon = v.find(':');
    auto offset = record_number(v.substr(0, colon));
    auto attempts = colon == std::string_view::npos ? std::optional<long long>(1)
                                                    : record_number(v.substr(colon + 1));
    if (!offset || !attempts) return std::nullopt;
    r.state = claim_record::kind::delivered;
    r.offset = *offset;
    r.attempts = *attempts;
  }
  return r;
}

std::string claim_record_text(const claim_record& r) {
  using kind = claim_record::kind;
  switch (r.state) {
    case kind::none:
      return {};
    case kind::delivered:
      if (r.unpublished) return "p:" + std::to_string(r.offset) + ":" + std::to_string(r.attempts);
      return r.attempts > 1 ? std::to_string(r.offset) + ":" + std::to_string(r.attempts)
                            : std::to_string(r.offset);
    case kind::leased:
      return "l:" + r.owner + ":" + std::to_string(r.until_ms) + ":" + std::to_string(r.attempts);
    case kind::released:
      return "r:" + std::to_string(r.attempts);
    case kind::dead:
      return "x:" + std::to_string(r.attempts) + ":" + r.reason;
  }
  return {};
}

}  // namespace pushonce::lua
