#pragma once
// The users whose tokens are revoked, as every gateway keeps them in memory so that the
// check at hello (and at /sse) is a hash lookup, never a Redis round trip. Filled from a
// snapshot of NS:{revoked} (read at start and after every reconnect of the subscriber)
// and from the broadcasts of revoke.lua on the control channel (docs/security.md,
// "Revocation"). Socket-free; thread-safe.

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/auth/authenticator.hpp"

namespace pushonce::gateway {

/// One revocation: tokens of the user issued at or before `at_ms` are refused until
/// `until_ms` (ms since the epoch, Redis's clock).
struct revocation {
  long long at_ms = 0;
  long long until_ms = 0;
  bool operator==(const revocation&) const = default;
};

/// A token is refused by `r` at `now_ms`: `r` has not expired and the token has no `iat`
/// or was issued in the revocation's second or before it (iat <= at_ms / 1000: `iat` has
/// whole seconds, a token of the same second may be older than the revocation).
bool refused_by(const revocation& r, const identity& who, long long now_ms);

/// A message of the control channel (revoke.lua): "d USER" (close the user's sessions) or
/// "r AT_MS UNTIL_MS USER" (revoke, then close them).
struct control_message {
  std::string user;
  std::optional<revocation> revoked;  // none: disconnect only
  bool operator==(const control_message&) const = default;
};
std::optional<control_message> parse_control_message(std::string_view payload);
std::string format_control_message(const control_message& m);

class revocations {
 public:
  /// Adds `r` for `user`; of two revocations of one user the later `at_ms` wins (and the
  /// later `until_ms`), so a snapshot and a broadcast can arrive in either order. True when
  /// it taught something: the user was not held, or `r` is later than what was.
  bool apply(const std::string& user, const revocation& r);
  /// A snapshot of NS:{revoked}: merged with what is held (never a removal: a broadcast
  /// heard before the snapshot's reply must survive it); expired entries are dropped.
  /// Returns the users it taught a revocation (not held, or a later one): their broadcast
  /// was missed (sessions opened before the first snapshot, or while the subscriber was
  /// away), so sessions of theirs may hold revoked tokens and are to be closed.
  std::vector<std::string> load(const std::vector<std::pair<std::string, revocation>>& snapshot,
                                long long now_ms);
  /// The first snapshot has been loaded (until then a hello cannot be checked).
  bool loaded() const;
  /// The identity's token is refused (see refused_by): one lookup in memory.
  bool revoked(const identity& who, long long now_ms) const;
  /// The same at the system clock's now: the check at hello, refresh and GET /sse.
  bool revoked(const identity& who) const;
  /// Drops expired entries; returns how many remain.
  std::size_t prune(long long now_ms);
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, revocation, std::less<>> by_user_;
  bool loaded_ = false;
};

/// The HGETALL reply of NS:{revoked} (field user, value "AT_MS:UNTIL_MS") as a snapshot;
/// fields that do not parse are skipped.
std::vector<std::pair<std::string, revocation>> parse_revocation_fields(
    const std::vector<std::pair<std::string, std::string>>& fields);

}  // namespace pushonce::gateway
