#include "core/lua/join.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

join_input join_for(const keys& k, const std::string& queue, std::string user,
                    const std::optional<std::pair<std::string, long long>>& pow) {
  join_input in{k.queue(queue, "waiting"),
                k.queue(queue, "assigned"),
                k.queue(queue, "ticket"),
                k.queue(queue, "registered"),
                k.queue(queue, "events"),
                k.queue(queue, "settings"),
                k.queue(queue, "prequeue"),
                k.queue(queue, "stats"),
                k.queue(queue, "prequeue:seq"),
                std::nullopt,
                std::move(user),
                k.wake_channel(),
                queue,
                std::nullopt};
  if (pow) {
    in.pow_used = k.queue(queue, "pow:" + pow->first);
    in.pow_ttl = pow->second;
  }
  return in;
}

script_call join_call(join_input in) {
  script_call c;
  c.keys = {std::move(in.waiting),    std::move(in.assigned), std::move(in.ticket_counter),
            std::move(in.registered), std::move(in.events),   std::move(in.settings),
            std::move(in.prequeue),   std::move(in.stats),    std::move(in.prequeue_seq)};
  c.args = {std::move(in.user), std::move(in.wake), std::move(in.queue)};
  if (in.pow_used && in.pow_ttl) {
    c.keys.push_back(std::move(*in.pow_used));
    c.args.push_back(std::to_string(*in.pow_ttl));
  }
  return c;
}

outcome<join_reply> join_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return join_reply{r.value.at(0).integer, r.value.at(1).integer, r.value.at(2).integer,
                    r.value.at(3).integer};
}

leave_input leave_for(const keys& k, const std::string& queue, std::string user) {
  return {k.queue(queue, "waiting"),
          k.queue(queue, "events"),
          k.queue(queue, "prequeue"),
          k.queue(queue, "prequeue:draw"),
          std::move(user),
          k.wake_channel(),
          queue};
}

script_call leave_call(leave_input in) {
  script_call c;
  c.keys = {std::move(in.waiting), std::move(in.events), std::move(in.prequeue),
            std::move(in.draw)};
  c.args = {std::move(in.user), std::move(in.wake), std::move(in.queue)};
  return c;
}

outcome<long long> leave_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return r.value.integer;
}

standing_input standing_for(const keys& k, const std::string& queue, std::string user) {
  return {k.queue(queue, "waiting"), k.queue(queue, "events"), k.queue(queue, "prequeue"),
          k.queue(queue, "settings"), std::move(user)};
}

script_call standing_call(standing_input in) {
  script_call c;
  c.keys = {std::move(in.waiting), std::move(in.events), std::move(in.prequeue),
            std::move(in.settings)};
  c.args = {std::move(in.user)};
  return c;
}

outcome<standing_reply> standing_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  const auto& e = r.value.elements;
  if (e.size() != 5) return failure{errc::internal, "standing: unexpected reply"};
  return standing_reply{e[0].integer, e[1].integer, e[2].integer, e[3].integer != 0, e[4].integer};
}

}  // namespace pushonce::lua
