#include "gateway/readiness.hpp"

#include <fmt/format.h>

namespace pushonce::gateway {

readiness_answer judge_readiness(const readiness_inputs& in) {
  bool ready = in.redis_ok && in.subscribed && in.sharded.value_or(true) && !in.draining;
  std::string sharded = in.sharded ? fmt::format(R"(,"sharded":{})", *in.sharded) : "";
  return {ready ? 200u : 503u,
          fmt::format(R"({{"ready":{},"redis":{},"subscribed":{},"draining":{}{}}})", ready,
                      in.redis_ok, in.subscribed, in.draining, sharded)};
}

}  // namespace pushonce::gateway
