#include "core/lua/accept.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

accept_input accept_for(const keys& k, const std::string& queue, std::string user,
                        std::string want) {
  return {k.queue(queue, "pending"),
          k.queue(queue, "pending:ids"),
          k.queue(queue, "assigned"),
          k.queue(queue, "admissions"),
          std::move(user),
          std::move(want)};
}

script_call accept_call(accept_input in) {
  script_call c;
  c.keys = {std::move(in.pending), std::move(in.pending_ids), std::move(in.assigned),
            std::move(in.admissions)};
  c.args = {std::move(in.user), std::move(in.want)};
  return c;
}

outcome<accept_reply> accept_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return accept_reply{r.value.at(0).str, r.value.at(1).str};
}

}  // namespace pushonce::lua
