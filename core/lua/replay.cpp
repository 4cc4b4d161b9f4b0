#include "core/lua/replay.hpp"

#include "core/lua/claim.hpp"
#include "core/redis/scripts.hpp"

namespace pushonce::lua {

redis::command replay_command(const keys& k, bool cluster, const replay_request& r) {
  auto ref = claim_record_ref(k, r.user, r.id);
  std::vector<std::string> ks{std::move(ref.key)};
  if (!cluster) {
    ks.push_back(k.plain("dead-letters"));
    if (!r.entries.empty()) ks.push_back(r.outbox);
  }
  std::vector<std::string> as{std::move(ref.field), std::to_string(r.dedup_window.count()),
                              k.bus_channel(), r.message};
  as.insert(as.end(), r.entries.begin(), r.entries.end());
  return redis::evalsha_command(redis::get_script("replay"), ks, as);
}

std::vector<redis::command> replay_followups(const keys& k, const replay_request& r) {
  redis::command del{"XDEL", k.plain("dead-letters")};
  del.insert(del.end(), r.entries.begin(), r.entries.end());
  return {{"XADD", r.outbox, "*", "m", r.message},
          {"PUBLISH", k.bus_channel(), r.message},
          std::move(del)};
}

}  // namespace pushonce::lua
