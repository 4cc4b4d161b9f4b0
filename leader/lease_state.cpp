#include "leader/lease_state.hpp"

#include <algorithm>

#include "core/redis/connection.hpp"

namespace pushonce::leader {

lease_reply lease_reply::from(const redis::result& r) {
  if (!r.ok() || r.value.kind != redis::reply::type::integer) return {};
  if (r.value.integer > 0) return {kind::token, r.value.integer};
  return {kind::held_by_other, 0};
}

lease_state::lease_state(std::chrono::milliseconds lease, clock_type::time_point now)
    : lease_(lease), last_ok_(now), next_wake_(now) {}

lease_call lease_state::next_call() const {
  if (release_) return lease_call::release;
  if (!token_) return lease_call::acquire;
  return refence_above_ > 0 ? lease_call::advance : lease_call::renew;
}

lease_action lease_state::on_reply(const lease_reply& r, clock_type::time_point now) {
  next_wake_ = now + renew_every();
  if (r.what != lease_reply::kind::failed) refence_above_ = 0;  // answered: done or moot
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

lease_action lease_state::on_fenced(std::string_view why, std::optional<long long> stored,
                                    clock_type::time_point now) {
  if (!token_ || release_) return lease_action::hold;
  if (!stored) return step_down(why);
  if (*stored <= token_) return lease_action::hold;  // passed meanwhile: assign again
  if (refence_above_ > 0) {                          // an advance is under way
    refence_above_ = std::max(refence_above_, *stored);
    return lease_action::hold;
  }
  if (now - last_refence_ > lease_) refences_ = 0;
  if (refences_ >= 3) {
    refences_ = 0;
    release_ = true;
    why_ = "fenced again after moving the fencing counter past the fence: giving up the lease";
    token_ = 0;
    return lease_action::give_up;
  }
  ++refences_;
  last_refence_ = now;
  refence_above_ = *stored;
  why_ = why;
  next_wake_ = now;
  return lease_action::refence;
}

void lease_state::on_released(clock_type::time_point now) {
  release_ = false;
  next_wake_ = now + lease_;
}

bool lease_state::on_stop() {
  bool ours = token_ != 0;
  token_ = 0;
  refence_above_ = 0;
  return ours;
}

lease_action lease_state::step_down(std::string_view why) {
  why_ = why;
  token_ = 0;
  refence_above_ = 0;
  return lease_action::step_down;
}

}  // namespace pushonce::leader
