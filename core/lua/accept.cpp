#include "core/lua/accept.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

accept_inputs accept_for(const keys& k, const std::string& queue, std::string user,
                         std::string want) {
  return accept_inputs{.pending = k.queue(queue, "pending"),
                       .pending_ids = k.queue(queue, "pending:ids"),
                       .assigned = k.queue(queue, "assigned"),
                       .admissions = k.queue(queue, "admissions"),
                       .leases = k.queue(queue, "leases"),
                       .settings = k.queue(queue, "settings"),
                       .admissions_t = k.queue(queue, "admissions:t"),
                       .user = std::move(user),
                       .want = std::move(want)};
}

outcome<accept_reply> accept_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  accept_reply out{r.value.at(0).str, r.value.at(1).str, std::nullopt};
  if (r.value.elements.size() > 2)
    if (auto end = r.value.at(2).as_int(); end && *end > 0) out.expires_at = *end;
  return out;
}

}  // namespace pushonce::lua
