#include "core/lua/join.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

join_inputs join_for(const keys& k, const std::string& queue, std::string user,
                     const std::optional<std::pair<std::string, long long>>& pow) {
  return join_inputs{.waiting = k.queue(queue, "waiting"),
                     .assigned = k.queue(queue, "assigned"),
                     .ticket_counter = k.queue(queue, "ticket"),
                     .registered = k.queue(queue, "registered"),
                     .events = k.queue(queue, "events"),
                     .settings = k.queue(queue, "settings"),
                     .prequeue = k.queue(queue, "prequeue"),
                     .stats = k.queue(queue, "stats"),
                     .prequeue_seq = k.queue(queue, "prequeue:seq"),
                     .pow_used = pow ? k.queue(queue, "pow:" + pow->first) : std::string(),
                     .user = std::move(user),
                     .wake = k.wake_channel(),
                     .queue = queue,
                     .pow_ttl = pow ? std::to_string(pow->second) : std::string()};
}

outcome<join_reply> join_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return join_reply{r.value.at(0).integer, r.value.at(1).integer, r.value.at(2).integer,
                    r.value.at(3).integer};
}

leave_inputs leave_for(const keys& k, const std::string& queue, std::string user) {
  return leave_inputs{.waiting = k.queue(queue, "waiting"),
                      .events = k.queue(queue, "events"),
                      .prequeue = k.queue(queue, "prequeue"),
                      .draw = k.queue(queue, "prequeue:draw"),
                      .user = std::move(user),
                      .wake = k.wake_channel(),
                      .queue = queue};
}

outcome<long long> leave_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return r.value.integer;
}

standing_inputs standing_for(const keys& k, const std::string& queue, std::string user) {
  return standing_inputs{.waiting = k.queue(queue, "waiting"),
                         .events = k.queue(queue, "events"),
                         .prequeue = k.queue(queue, "prequeue"),
                         .settings = k.queue(queue, "settings"),
                         .user = std::move(user)};
}

outcome<standing_reply> standing_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  const auto& e = r.value.elements;
  if (e.size() != 5) return failure{errc::internal, "standing: unexpected reply"};
  return standing_reply{e[0].integer, e[1].integer, e[2].integer, e[3].integer != 0, e[4].integer};
}

}  // namespace pushonce::lua
