#pragma once
// The message ids a process has made, per queue: the highest sequence number of each
// (id div 4096). A failover that loses the queue slot's last writes rolls its sequence back;
// the process passes this floor to assign.lua, assign_plan.lua and expire.lua as the least
// base of their next ids, so it never hands out an id it made before (lua/lib/prelude.lua
// seq_floor: the clock covers the rest).

#include <string>
#include <string_view>
#include <unordered_map>

namespace pushonce {

class id_floor {
 public:
  /// Message `id` (decimal) of `queue` was made; an id that is not decimal is ignored.
  void saw(const std::string& queue, std::string_view id);
  /// The highest sequence number seen for `queue` (0: none).
  long long at(const std::string& queue) const;

 private:
  std::unordered_map<std::string, long long> top_;
};

}  // namespace pushonce
