#include "leader/lease_state.hpp"

#include "core/redis/connection.hpp"

namespace pushonce::leader {

lease_reply lease_reply::from(const redis::result& r) {
  if (!r.ok() || r.value.kind != redis::reply::type::integer) return {};
  if (r.value.integer > 0) return {kind::token, r.value.integer};
  return {kind::held_by_other, 0};
}

lease_state::lease_state(std::chrono::milliseconds lease, clock_type::time_point now)
    : lease_(lease), last_ok_(now), next_wake_(now) {}

lease_action lease_state::on_reply(const lease_reply& r, clock_type::time_point now) {
  next_wake_ = now + renew_every();
  switch (r.what) {
    case lease_reply::kind::token: {
      last_ok_ = now;
      if (token_ == r.token) return lease_action::hold;
      token_ = r.token;  // new leadership, or a newer token for the same holder
      return lease_action::lead;
    }
    case lease_reply::kind::held_by_other:
      if (!token_) return lease_action::standby;
      return step_down("the lease is held by another leader");
    case lease_reply::kind::failed:
      if (token_ && now - last_ok_ > give_up_after())
        return step_down("cannot renew the lease (Redis unreachable)");
      return lease_action::hold;
  }
  return lease_action::hold;
}

lease_action lease_state::on_fenced(std::string_view why) {
  if (!token_) return lease_action::hold;
  return step_down(why);
}

bool lease_state::on_stop() {
  bool ours = token_ != 0;
  token_ = 0;
  return ours;
}

lease_action lease_state::step_down(std::string_view why) {
  why_ = why;
  token_ = 0;
  return lease_action::step_down;
}

}  // namespace pushonce::leader
