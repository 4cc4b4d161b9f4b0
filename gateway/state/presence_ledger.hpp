#pragma once
// The sessions of this gateway instance that Redis counts: a session is counted once its
// presence_open.lua call landed and until its presence_close.lua call landed. A reclaim after
// a fold (server/presence_check) counts exactly these again, so a session whose open is still
// on its way (routed, not yet welcomed, or retrying against a slow Redis) is not counted twice:
// its open adds it when it lands. Socket-free; thread-safe (sessions run on many strands).

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pushonce::gateway {

class presence_ledger {
 public:
  /// A presence_open.lua call of `user` landed.
  void opened(const std::string& user);
  /// A presence_close.lua call of `user` landed (of a session whose open had landed).
  void closed(const std::string& user);
  /// Every user with counted sessions here and how many: what a reclaim sends.
  std::vector<std::pair<std::string, std::size_t>> counted() const;
  std::size_t users() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::size_t, std::less<>> sessions_;
};

/// When a presence call that failed is sent again: 100 ms after the first failure, doubling,
/// at most 5 s apart (the call is retried until it lands: a lost open would let a connected
/// user be abandoned, a lost close would keep a ghost in the line).
std::chrono::milliseconds presence_retry_delay(int failures);

}  // namespace pushonce::gateway
