#include "gateway/http/readiness.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace pushonce::gateway {

namespace {

std::string reason_of(const readiness_inputs& in) {
  if (in.draining) return "draining";
  // The cause of the refusals below, when it is one: say it first.
  if (in.slots_without_master && !in.slots_without_master->empty())
    return "redis cluster slots without a master: " + *in.slots_without_master;
  if (!in.redis_ok)
    return in.redis_error.empty() ? "redis did not answer"
                                  : "redis did not answer: " + in.redis_error;
  if (!in.writable)
    return in.redis_error.empty() ? "redis refuses writes"
                                  : "redis refuses writes: " + in.redis_error;
  if (!in.subscribed) return "the subscriber is not connected";
  if (in.sharded && !*in.sharded) return "a user channel is not placed on a live node";
  return "";
}

}  // namespace

readiness_answer judge_readiness(const readiness_inputs& in) {
  const bool slots_served = !in.slots_without_master || in.slots_without_master->empty();
  bool ready = in.redis_ok && in.writable && in.subscribed && in.sharded.value_or(true) &&
               slots_served && !in.draining;
  boost::json::object o;
  o["ready"] = ready;
  o["redis"] = in.redis_ok;
  o["subscribed"] = in.subscribed;
  o["draining"] = in.draining;
  if (in.sharded) o["sharded"] = *in.sharded;
  if (!slots_served) o["slots_without_master"] = *in.slots_without_master;
  if (in.redis_ok && !in.writable) o["writable"] = false;
  if (!ready) o["reason"] = reason_of(in);
  return {ready ? 200u : 503u, boost::json::serialize(o)};
}

}  // namespace pushonce::gateway
