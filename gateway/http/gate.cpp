#include "gateway/http/gate.hpp"

#include <cctype>

namespace pushonce::gateway {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::string> gate_token_of(std::string_view cookie_header,
                                         std::string_view authorization) {
  constexpr std::string_view name = "pushonce_admission=";
  while (!cookie_header.empty()) {
    auto semi = cookie_header.find(';');
    auto part = trim(cookie_header.substr(0, semi));
    if (part.substr(0, name.size()) == name && part.size() > name.size())
      return std::string(part.substr(name.size()));
    if (semi == std::string_view::npos) break;
    cookie_header.remove_prefix(semi + 1);
  }
  constexpr std::string_view bearer = "Bearer ";
  if (authorization.size() > bearer.size() && authorization.substr(0, bearer.size()) == bearer)
    return std::string(trim(authorization.substr(bearer.size())));
  return std::nullopt;
}

std::optional<admission::claims> gate_tokens::claims_of(const std::string& token,
                                                        const admission::verifier& v) {
  if (token.size() > 8192) return std::nullopt;
  const auto digest = admission::sha256(token);
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_digest_.find(digest); it != by_digest_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
  }
  // Verified outside the lock; exp is judged by the caller (0: any exp passes here).
  auto r = v.verify(token, 0);
  std::lock_guard lock(mutex_);
  ++verifications_;
  if (!r.ok) return std::nullopt;
  if (by_digest_.count(digest) == 0) {
    order_.emplace_front(digest, *r.ok);
    by_digest_[digest] = order_.begin();
    if (order_.size() > capacity_) {
      by_digest_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  return r.ok;
}

std::optional<admission::claims> gate_tokens::cached(const std::string& token) {
  if (token.size() > 8192) return std::nullopt;
  const auto digest = admission::sha256(token);
  std::lock_guard lock(mutex_);
  auto it = by_digest_.find(digest);
  if (it == by_digest_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

std::size_t gate_tokens::size() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

std::optional<std::optional<admission::record>> gate_states::fresh(const std::string& id,
                                                                   clock::time_point now) const {
  std::lock_guard lock(mutex_);
  auto it = states_.find(id);
  if (it == states_.end() || now - it->second.read_at >= fresh_for_) return std::nullopt;
  return it->second.record;
}

void gate_states::put(const std::string& id, std::optional<admission::record> r,
                      clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (states_.size() >= capacity_) {
    // Stale entries go first; when every one is fresh the map is cleared (each costs one
    // read again): bounded either way.
    for (auto it = states_.begin(); it != states_.end();)
      it = now - it->second.read_at >= fresh_for_ ? states_.erase(it) : std::next(it);
    if (states_.size() >= capacity_) states_.clear();
  }
  states_[id] = {std::move(r), now};
}

void gate_renewals::add(const std::string& queue, const std::string& id, long long at_ms) {
  std::lock_guard lock(mutex_);
  auto& at = pending_[{queue, id}];
  at = std::max(at, at_ms);
}

std::vector<std::pair<std::pair<std::string, std::string>, long long>> gate_renewals::take(
    std::chrono::steady_clock::time_point now, std::chrono::milliseconds every) {
  std::lock_guard lock(mutex_);
  if (pending_.empty() || now - last_ < every) return {};
  last_ = now;
  std::vector<std::pair<std::pair<std::string, std::string>, long long>> out(pending_.begin(),
                                                                             pending_.end());
  pending_.clear();
  return out;
}

gate_answer gate_decide(const admission::claims& claims, std::string_view queue,
                        const std::optional<admission::record>& state, long long now_ms) {
  if (claims.queue != queue)
    return {403, "forbidden", "the admission is for queue " + claims.queue.substr(0, 128), false};
  const bool exp_passed = claims.exp * 1000 <= now_ms;
  if (!state) {
    if (exp_passed) return {401, "unauthorized", "the token has expired", false};
    return {403, "forbidden", "no such admission", false};
  }
  if (state->user != claims.sub || state->resource != claims.resource)
    return {403, "forbidden", "the admission is recorded for another user or resource", false};
  if (state->state != "assigned" && state->state != "accepted")
    return {403, "forbidden", "the admission has " + state->state.substr(0, 32), false};
  if (state->expires_at && *state->expires_at <= now_ms)
    return {403, "forbidden", "the admission's lease has ended", false};
  return {204, {}, {}, true};
}

std::string gate_cookie(const std::string& token, bool dev, const std::string& domain) {
  std::string c = "pushonce_admission=" + token + "; Path=/; HttpOnly; SameSite=Lax";
  if (!dev) c += "; Secure";
  if (!domain.empty()) c += "; Domain=" + domain;
  return c;
}

namespace {

// The host name of "host[:port]" or "[v6]:port", lower-cased.
std::string host_name(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    authority = authority.substr(0, authority.find(']') + 1);
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    authority = authority.substr(0, colon);
  }
  std::string out(authority);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool gate_same_origin(std::string_view origin, std::string_view host) {
  for (std::string_view scheme : {"https://", "http://"}) {
    if (origin.substr(0, scheme.size()) != scheme) continue;
    auto authority = origin.substr(scheme.size());
    if (authority.empty() || host.empty() || authority.find('/') != std::string_view::npos)
      return false;
    return host_name(authority) == host_name(host);
  }
  return false;
}

}  // namespace pushonce::gateway
