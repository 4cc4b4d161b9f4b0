#pragma once
// The gate in front of a checkout (docs/operations.md "Protecting a checkout"): GET
// /api/gate?queue=Q for nginx's auth_request and POST /api/gate/cookie, decided without sockets.
// The routes in gateway/http/gate_routes carry the decisions out.
//
// - gate_token_of: the admission token of a request (cookie pushonce_admission, else a
//   bearer header).
// - gate_tokens: verified tokens, a bounded LRU by SHA-256 digest, so a repeat check costs
//   no signature verification (exp is judged at each check from the cached claims).
// - gate_states: admission states read from Redis, kept at most 1 s (the gate refuses within
//   1 s of a release or revoke; a lease's deadline is judged from the cached end itself).
// - gate_renewals: the live leases the checks renewed, flushed by one batch a second, each
//   carrying its latest check's time.
// - gate_decide: the answer from the claims, the queue asked for and the state.

#include <chrono>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/admission_plan.hpp"
#include "core/admission_token.hpp"
#include "gateway/auth/auth_failures.hpp"

namespace pushonce::gateway {

/// The token of a request: the `pushonce_admission` cookie of `cookie_header`, else the
/// token of an `Authorization: Bearer` header; std::nullopt when there is none.
std::optional<std::string> gate_token_of(std::string_view cookie_header,
                                         std::string_view authorization);

/// Verified tokens by digest (thread-safe, at most `capacity`, least recently used first out).
class gate_tokens {
 public:
  explicit gate_tokens(std::size_t capacity = 10000) : capacity_(capacity) {}
  /// The token's claims when its signature holds (exp is not judged here): cached, or
  /// verified with `v` and cached; std::nullopt for a token that does not verify (not cached:
  /// a flood of bad tokens cannot push good ones out).
  std::optional<admission::claims> claims_of(const std::string& token,
                                             const admission::verifier& v);
  /// The claims of a token verified before (no verification here).
  std::optional<admission::claims> cached(const std::string& token);
  std::size_t size() const;
  unsigned long long verifications() const { return verifications_; }

 private:
  using entry = std::pair<std::string, admission::claims>;
  mutable std::mutex mutex_;
  std::size_t capacity_;
  std::list<entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<entry>::iterator> by_digest_;
  unsigned long long verifications_ = 0;
};

/// Admission states by id, each kept `fresh_for` after it was read (thread-safe, bounded).
class gate_states {
 public:
  using clock = std::chrono::steady_clock;
  explicit gate_states(std::chrono::milliseconds fresh_for = std::chrono::milliseconds(1000),
                       std::size_t capacity = 100000)
      : fresh_for_(fresh_for), capacity_(capacity) {}
  /// The state of `id` read less than fresh_for ago (std::nullopt inside: no record).
  std::optional<std::optional<admission::record>> fresh(const std::string& id,
                                                        clock::time_point now) const;
  void put(const std::string& id, std::optional<admission::record> r, clock::time_point now);

 private:
  struct entry {
    std::optional<admission::record> record;
    clock::time_point read_at;
  };
  mutable std::mutex mutex_;
  std::chrono::milliseconds fresh_for_;
  std::size_t capacity_;
  std::unordered_map<std::string, entry> states_;
};

/// Renewals asked by checks, batched: one flush a second per gateway.
class gate_renewals {
 public:
  /// A check at `at_ms` (the wall clock) found admission `id` of `queue` live.
  void add(const std::string& queue, const std::string& id, long long at_ms);
  /// The renewals to send now (each with its latest check's time), when the last flush was
  /// at least `every` ago at `now`; empty otherwise.
  std::vector<std::pair<std::pair<std::string, std::string>, long long>> take(
      std::chrono::steady_clock::time_point now,
      std::chrono::milliseconds every = std::chrono::milliseconds(1000));

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, long long> pending_;
  std::chrono::steady_clock::time_point last_{};
};

/// A gateway's gate state (gateway_state::gate).
struct gate_caches {
  gate_tokens tokens;
  gate_states states;
  gate_renewals renewals;
  // Tokens that did not verify, per client address: 20 at once, then 20 a minute; over
  // that the address is answered 429 without a verification (a signature check costs
  // 60-90 µs; a valid token is cached after its first).
  auth_failures bad_tokens{20, 20};
};

/// The gate's answer: 204 with the admission's headers, or a refusal (401: no or a bad
/// token; 403: another queue, an admission that ended or is not this token's).
struct gate_answer {
  unsigned status = 204;
  std::string error;    // "unauthorized" | "forbidden"
  std::string message;  // why, for the JSON body and the log
  bool renew = false;   // a live admission: renew its lease
};

/// `claims` verified (its exp not judged yet), `queue` the one asked for, `state` its
/// admission's record (std::nullopt: none), `now_ms` the wall clock. A token past its exp
/// stands while its admission is live; a lease whose end has passed is refused at once.
gate_answer gate_decide(const admission::claims& claims, std::string_view queue,
                        const std::optional<admission::record>& state, long long now_ms);

/// The Set-Cookie value of POST /api/gate/cookie: HttpOnly, SameSite=Lax, Path=/, Secure
/// unless `dev`, Domain when given.
std::string gate_cookie(const std::string& token, bool dev, const std::string& domain);

/// Same-origin check of POST /api/gate/cookie: `origin` names the same host as the Host
/// header `host`. Ports are not compared: a proxy in front (nginx's Host $host) drops the
/// port, and a cookie is the host's for every port anyway.
bool gate_same_origin(std::string_view origin, std::string_view host);

}  // namespace pushonce::gateway
